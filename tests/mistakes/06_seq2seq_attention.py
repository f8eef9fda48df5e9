"""Typical mistakes in lab 06: each must lose points and show the message that names it."""

from course.coursedir.scratch import Mistake, with_replacements

ATTENTION_HEAD = '''
class Attention(nn.Module):
    def __init__(self, hidden_dim):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.w_q = nn.Linear(hidden_dim, hidden_dim)
        self.w_k = nn.Linear(hidden_dim, hidden_dim)

    def forward(self, query, keys, values, mask=None):
'''

DECODER_HEAD = '''
class DecoderWithAttention(nn.Module):
    def __init__(self, n_features, hidden_dim):
        super().__init__()
        self.cell = nn.GRUCell(n_features + hidden_dim, hidden_dim)
        self.attention = Attention(hidden_dim)
        self.output = nn.Linear(2 * hidden_dim, n_features)

    def forward(self, x, hidden, encoder_states, mask=None):
'''

SEQ2SEQ_HEAD = '''
class Seq2SeqWithAttention(nn.Module):
    def __init__(self, encoder, decoder, target_len, teacher_forcing=0.5):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.target_len = target_len
        self.teacher_forcing = teacher_forcing

    def forward(self, source, target=None, mask=None, target_lengths=None):
'''


def attention(body):
    """A whole Attention cell whose forward runs `body` (indented 8 spaces)."""
    return ATTENTION_HEAD + body


def decoder(body):
    """A whole DecoderWithAttention cell whose forward runs `body`."""
    return DECODER_HEAD + body


def seq2seq(*replacements):
    """A whole Seq2SeqWithAttention cell: the right forward with each (old, new) pair replaced."""
    return SEQ2SEQ_HEAD + with_replacements(SEQ2SEQ_BODY, *replacements)


SEQ2SEQ_BODY = '''
        n, length, _ = source.shape
        if mask is None:
            mask = torch.ones(n, 1, length, dtype=torch.bool)
        if target_lengths is None:
            target_lengths = torch.full((n,), self.target_len)
        decoding = torch.arange(self.target_len) < target_lengths[:, None]
        step_masks = decoding.unsqueeze(-1) & mask
        states, hidden = self.encoder(source, mask)
        x = last_step(source, mask)
        predictions, weights = [], []
        for step in range(self.target_len):
            step_mask = step_masks[:, step:step + 1]
            prediction, hidden, step_weights = self.decoder(x, hidden, states, step_mask)
            predictions.append(prediction)
            weights.append(step_weights)
            x = prediction
            if self.training and target is not None:
                forced = torch.rand(n, 1, 1) < self.teacher_forcing
                x = torch.where(forced, target[:, step:step + 1], prediction)
        predictions = torch.cat(predictions, dim=1).masked_fill(~decoding.unsqueeze(-1), 0.0)
        return predictions, torch.cat(weights, dim=1)
'''

FORCING = '''            if self.training and target is not None:
                forced = torch.rand(n, 1, 1) < self.teacher_forcing
                x = torch.where(forced, target[:, step:step + 1], prediction)
'''

MISTAKES = [
    Mistake(
        name="attention_not_scaled",
        cell="attention",
        code=attention('''
        scores = self.w_q(query) @ self.w_k(keys).transpose(1, 2)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return weights @ values, weights
'''),
        message="it looks like you forgot to divide the scores by sqrt(hidden_dim)",
    ),
    Mistake(
        name="attention_softmax_over_queries",
        cell="attention",
        code=attention('''
        scores = self.w_q(query) @ self.w_k(keys).transpose(1, 2)
        scores = scores / self.hidden_dim**0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=1)
        return weights @ values, weights
'''),
        message="did you normalise over the wrong dimension?",
    ),
    Mistake(
        name="attention_keys_as_values",
        cell="attention",
        code=attention('''
        scores = self.w_q(query) @ self.w_k(keys).transpose(1, 2)
        scores = scores / self.hidden_dim**0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return weights @ keys, weights
'''),
        message="it looks like you used the keys as the values",
    ),
    Mistake(
        name="attention_without_projections",
        cell="attention",
        code=attention('''
        scores = query @ keys.transpose(1, 2) / self.hidden_dim**0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return weights @ values, weights
'''),
        message="it looks like you used the keys and the query without their projections",
    ),
    Mistake(
        name="attention_ignores_mask",
        cell="attention",
        code=attention('''
        scores = self.w_q(query) @ self.w_k(keys).transpose(1, 2)
        weights = torch.softmax(scores / self.hidden_dim**0.5, dim=-1)
        return weights @ values, weights
'''),
        message="it looks like you ignored the mask",
    ),
    Mistake(
        name="attention_inverted_mask",
        cell="attention",
        code=attention('''
        scores = self.w_q(query) @ self.w_k(keys).transpose(1, 2)
        scores = scores / self.hidden_dim**0.5
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return weights @ values, weights
'''),
        message="it looks like you inverted the mask",
    ),
    Mistake(
        name="attention_masked_scores_zero",
        cell="attention",
        code=attention('''
        scores = self.w_q(query) @ self.w_k(keys).transpose(1, 2)
        scores = scores / self.hidden_dim**0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, 0.0)
        weights = torch.softmax(scores, dim=-1)
        return weights @ values, weights
'''),
        message="it looks like you set the masked scores to 0 instead of -inf",
    ),
    Mistake(
        name="attention_fully_masked_row_nan",
        cell="attention",
        code=attention('''
        scores = self.w_q(query) @ self.w_k(keys).transpose(1, 2)
        scores = scores / self.hidden_dim**0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return weights @ values, weights
'''),
        message="gave NaN weights to a query whose keys are all masked",
    ),
    Mistake(
        name="decoder_luong_order",
        cell="decoder_with_attention",
        code=decoder('''
        hidden = self.cell(x[:, 0], hidden)
        query = hidden.unsqueeze(1)
        context, weights = self.attention(query, encoder_states, encoder_states, mask)
        prediction = self.output(torch.cat([context, query], dim=-1))
        return prediction, hidden, weights
'''),
        message="the GRU cell takes [x, context], (N, F + H)",
    ),
    Mistake(
        name="decoder_query_after_a_step_without_context",
        cell="decoder_with_attention",
        code=decoder('''
        zeros = torch.zeros_like(hidden).unsqueeze(1)
        stepped = self.cell(torch.cat([x, zeros], dim=-1)[:, 0], hidden)
        context, weights = self.attention(stepped.unsqueeze(1), encoder_states, encoder_states,
                                          mask)
        hidden = self.cell(torch.cat([x, context], dim=-1)[:, 0], hidden)
        prediction = self.output(torch.cat([context, hidden.unsqueeze(1)], dim=-1))
        return prediction, hidden, weights
'''),
        message="the query is the state before the GRU step",
    ),
    Mistake(
        name="decoder_query_from_encoder",
        cell="decoder_with_attention",
        code=decoder('''
        query = encoder_states[:, -1:]
        context, weights = self.attention(query, encoder_states, encoder_states, mask)
        hidden = self.cell(torch.cat([x, context], dim=-1)[:, 0], hidden)
        prediction = self.output(torch.cat([context, hidden.unsqueeze(1)], dim=-1))
        return prediction, hidden, weights
'''),
        message="it looks like you used the encoder's last state as the query",
    ),
    Mistake(
        name="decoder_context_before_point",
        cell="decoder_with_attention",
        code=decoder('''
        query = hidden.unsqueeze(1)
        context, weights = self.attention(query, encoder_states, encoder_states, mask)
        hidden = self.cell(torch.cat([context, x], dim=-1)[:, 0], hidden)
        prediction = self.output(torch.cat([context, hidden.unsqueeze(1)], dim=-1))
        return prediction, hidden, weights
'''),
        message="it looks like you fed [context, x] to the GRU cell",
    ),
    Mistake(
        name="decoder_predicts_from_old_state",
        cell="decoder_with_attention",
        code=decoder('''
        query = hidden.unsqueeze(1)
        context, weights = self.attention(query, encoder_states, encoder_states, mask)
        new_hidden = self.cell(torch.cat([x, context], dim=-1)[:, 0], hidden)
        prediction = self.output(torch.cat([context, query], dim=-1))
        return prediction, new_hidden, weights
'''),
        message="it looks like you predicted from the state before the step",
    ),
    Mistake(
        name="decoder_weights_squeezed",
        cell="decoder_with_attention",
        code=decoder('''
        query = hidden.unsqueeze(1)
        context, weights = self.attention(query, encoder_states, encoder_states, mask)
        hidden = self.cell(torch.cat([x, context], dim=-1)[:, 0], hidden)
        prediction = self.output(torch.cat([context, hidden.unsqueeze(1)], dim=-1))
        return prediction, hidden, weights.squeeze(1)
'''),
        message="weights has shape (3, 5), expected (3, 1, 5)",
    ),
    Mistake(
        name="decoder_state_before_context",
        cell="decoder_with_attention",
        code=decoder('''
        query = hidden.unsqueeze(1)
        context, weights = self.attention(query, encoder_states, encoder_states, mask)
        hidden = self.cell(torch.cat([x, context], dim=-1)[:, 0], hidden)
        prediction = self.output(torch.cat([hidden.unsqueeze(1), context], dim=-1))
        return prediction, hidden, weights
'''),
        message="it looks like you concatenated [state, context]",
    ),
    Mistake(
        name="decoder_drops_mask",
        cell="decoder_with_attention",
        code=decoder('''
        query = hidden.unsqueeze(1)
        context, weights = self.attention(query, encoder_states, encoder_states)
        hidden = self.cell(torch.cat([x, context], dim=-1)[:, 0], hidden)
        prediction = self.output(torch.cat([context, hidden.unsqueeze(1)], dim=-1))
        return prediction, hidden, weights
'''),
        message="it looks like you did not pass the mask to the attention",
    ),
    Mistake(
        name="decoder_returns_old_hidden",
        cell="decoder_with_attention",
        code=decoder('''
        query = hidden.unsqueeze(1)
        context, weights = self.attention(query, encoder_states, encoder_states, mask)
        new_hidden = self.cell(torch.cat([x, context], dim=-1)[:, 0], hidden)
        prediction = self.output(torch.cat([context, new_hidden.unsqueeze(1)], dim=-1))
        return prediction, hidden, weights
'''),
        message="it looks like you returned the old hidden state instead of the updated one",
    ),
    Mistake(
        name="teacher_forcing_in_eval",
        cell="seq2seq_with_attention",
        code=seq2seq("if self.training and target is not None:", "if target is not None:"),
        message="it looks like you used teacher forcing in evaluation mode",
    ),
    Mistake(
        name="target_fed_whenever_given",
        cell="seq2seq_with_attention",
        code=seq2seq(FORCING, """            if target is not None:
                x = target[:, step:step + 1]
"""),
        message="it looks like you used teacher forcing in evaluation mode",
    ),
    Mistake(
        name="prediction_not_fed_back",
        cell="seq2seq_with_attention",
        code=seq2seq("            x = prediction\n", "",
                     "target[:, step:step + 1], prediction)", "target[:, step:step + 1], x)"),
        message="it looks like you fed the last source point at every step",
    ),
    Mistake(
        name="output_length_fixed_to_two",
        cell="seq2seq_with_attention",
        code=seq2seq("for step in range(self.target_len):", "for step in range(2):",
                     "torch.arange(self.target_len)", "torch.arange(2)"),
        message="predictions has shape (2, 2, 2), expected (2, 3, 2)",
    ),
    Mistake(
        name="starts_from_padding",
        cell="seq2seq_with_attention",
        code=seq2seq("x = last_step(source, mask)", "x = source[:, -1:]"),
        message="started the decoder from source[:, -1:], which is padding",
    ),
    Mistake(
        name="teacher_forcing_with_python_random",
        cell="seq2seq_with_attention",
        code="\nimport random\n" + seq2seq(
            "forced = torch.rand(n, 1, 1) < self.teacher_forcing",
            "forced = torch.tensor([[[random.random() < self.teacher_forcing]] for _ in range(n)])",
        ),
        message="draw the teacher forcing decision with torch.rand",
    ),
    Mistake(
        name="teacher_forcing_one_draw_per_batch",
        cell="seq2seq_with_attention",
        code=seq2seq("torch.rand(n, 1, 1)", "torch.rand(())"),
        message="draw one decision per sequence",
    ),
    Mistake(
        name="padded_predictions_kept",
        cell="seq2seq_with_attention",
        code=seq2seq(".masked_fill(~decoding.unsqueeze(-1), 0.0)", ""),
        message="did not set the predictions of the padded steps (t >= target_lengths[i]) to 0",
    ),
    Mistake(
        name="target_mask_one_step_too_long",
        cell="seq2seq_with_attention",
        code=seq2seq("torch.arange(self.target_len) < target_lengths[:, None]",
                     "torch.arange(self.target_len) <= target_lengths[:, None]"),
        message="kept one step too many",
    ),
    Mistake(
        name="decoder_gets_source_mask_only",
        cell="seq2seq_with_attention",
        code=seq2seq("self.decoder(x, hidden, states, step_mask)",
                     "self.decoder(x, hidden, states, mask)"),
        message="gave the decoder the source mask alone",
    ),
    Mistake(
        name="decoder_gets_target_mask_only",
        cell="seq2seq_with_attention",
        code=seq2seq("step_masks = decoding.unsqueeze(-1) & mask",
                     "step_masks = decoding.unsqueeze(-1)"),
        message="are not row t of (target mask & source mask)",
    ),
]
