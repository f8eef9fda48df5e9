"""Typical mistakes in lab 06: each must lose points and show the message that names it."""

from catalogue import Mistake
from catalogue import with_replacements as _with

# Correct answers; each mistake below changes one part of one of them.
_ATTENTION = '''
class Attention(nn.Module):
    def __init__(self, hidden_dim):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.w_q = nn.Linear(hidden_dim, hidden_dim)
        self.w_k = nn.Linear(hidden_dim, hidden_dim)

    def forward(self, query, keys, values, mask=None):

        scores = self.w_q(query) @ self.w_k(keys).transpose(1, 2)
        scores = scores / self.hidden_dim**0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
            scores = scores.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = weights.masked_fill(~mask, 0.0)
        return weights @ values, weights
'''

# The answer that leaves a fully masked row NaN: most attention mistakes below change it.
_NAN_ROWS = _with(
    _ATTENTION,
    "            scores = scores.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)\n", "",
    """        if mask is not None:
            weights = weights.masked_fill(~mask, 0.0)
""", "",
)

_DECODER = '''
class DecoderWithAttention(nn.Module):
    def __init__(self, n_features, hidden_dim):
        super().__init__()
        self.cell = nn.GRUCell(n_features + hidden_dim, hidden_dim)
        self.attention = Attention(hidden_dim)
        self.output = nn.Linear(2 * hidden_dim, n_features)

    def forward(self, x, hidden, encoder_states, mask=None):

        query = hidden.unsqueeze(1)
        context, weights = self.attention(query, encoder_states, encoder_states, mask)
        hidden = self.cell(torch.cat([x, context], dim=-1)[:, 0], hidden)
        prediction = self.output(torch.cat([context, hidden.unsqueeze(1)], dim=-1))
        return prediction, hidden, weights
'''

_SEQ2SEQ = '''
class Seq2SeqWithAttention(nn.Module):
    def __init__(self, encoder, decoder, target_len, teacher_forcing=0.5):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.target_len = target_len
        self.teacher_forcing = teacher_forcing

    def forward(self, source, target=None, mask=None, target_lengths=None):

        n, length, _ = source.shape
        if mask is None:
            mask = torch.ones(n, 1, length, dtype=torch.bool)
        if target_lengths is None:
            target_lengths = torch.full((n,), self.target_len)
        if bool(((target_lengths < 1) | (target_lengths > self.target_len)).any()):
            raise ValueError(f"target_lengths must lie in 1..{self.target_len}")
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

_HALF_INVERTED = "inverted the mask in one of its two uses (-inf in the scores and 0 in the weights"

# The catalogue's correct answers, by cell: each gets every point (tests/lessons/test_autograde.py).
BASES = {
    "attention": _ATTENTION,
    "decoder_with_attention": _DECODER,
    "seq2seq_with_attention": _SEQ2SEQ,
}

MISTAKES = [
    Mistake("attention_not_scaled", "attention",
            _with(_NAN_ROWS, "        scores = scores / self.hidden_dim**0.5\n", ""),
            "it looks like you forgot to divide the scores by sqrt(hidden_dim)"),
    Mistake("attention_softmax_over_queries", "attention", _with(_NAN_ROWS, "dim=-1)", "dim=1)"),
            "did you normalise over the wrong dimension?"),
    Mistake("attention_keys_as_values", "attention", _with(_NAN_ROWS, "@ values,", "@ keys,"),
            "it looks like you used the keys as the values"),
    Mistake("attention_without_projections", "attention",
            _with(_NAN_ROWS,
                  '''\
        scores = self.w_q(query) @ self.w_k(keys).transpose(1, 2)
        scores = scores / self.hidden_dim**0.5
''', "        scores = query @ keys.transpose(1, 2) / self.hidden_dim**0.5\n"),
            "it looks like you used the keys and the query without their projections"),
    Mistake("attention_ignores_mask", "attention",
            _with(_NAN_ROWS,
                  '''\
        scores = scores / self.hidden_dim**0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
''', "        weights = torch.softmax(scores / self.hidden_dim**0.5, dim=-1)\n"),
            "it looks like you ignored the mask"),
    Mistake("attention_inverted_mask", "attention",
            _with(_NAN_ROWS, "scores.masked_fill(~mask,", "scores.masked_fill(mask,"),
            "it looks like you inverted the mask"),
    Mistake("attention_scores_mask_inverted", "attention",
            _with(_ATTENTION, 'scores.masked_fill(~mask, float("-inf"))',
                  'scores.masked_fill(mask, float("-inf"))'),
            _HALF_INVERTED),
    Mistake("attention_weights_mask_inverted", "attention",
            _with(_ATTENTION, "weights.masked_fill(~mask,", "weights.masked_fill(mask,"),
            _HALF_INVERTED),
    Mistake("attention_masked_scores_zero", "attention", _with(_NAN_ROWS, 'float("-inf"))', "0.0)"),
            "it looks like you set the masked scores to 0 instead of -inf"),
    Mistake("attention_fully_masked_row_nan", "attention", _NAN_ROWS,
            "gave NaN weights to a query whose keys are all masked"),
    Mistake("decoder_luong_order", "decoder_with_attention",
            _with(_DECODER,
                  '''\

        query = hidden.unsqueeze(1)
''', '''\

        hidden = self.cell(x[:, 0], hidden)
        query = hidden.unsqueeze(1)
''',
                  '''\
        hidden = self.cell(torch.cat([x, context], dim=-1)[:, 0], hidden)
        prediction = self.output(torch.cat([context, hidden.unsqueeze(1)], dim=-1))
''', "        prediction = self.output(torch.cat([context, query], dim=-1))\n"),
            "the GRU cell takes [x, context], (N, F + H)"),
    Mistake("decoder_query_after_a_step_without_context", "decoder_with_attention",
            _with(_DECODER,
                  '''\
        query = hidden.unsqueeze(1)
        context, weights = self.attention(query, encoder_states, encoder_states, mask)
''', '''\
        zeros = torch.zeros_like(hidden).unsqueeze(1)
        stepped = self.cell(torch.cat([x, zeros], dim=-1)[:, 0], hidden)
        context, weights = self.attention(stepped.unsqueeze(1), encoder_states, encoder_states,
                                          mask)
'''),
            "the query is the state before the GRU step"),
    Mistake("decoder_query_from_encoder", "decoder_with_attention",
            _with(_DECODER, "= hidden.unsqueeze(1)", "= encoder_states[:, -1:]"),
            "it looks like you used the encoder's last state as the query"),
    Mistake("decoder_context_before_point", "decoder_with_attention",
            _with(_DECODER,
                  "self.cell(torch.cat([x, context],", "self.cell(torch.cat([context, x],"),
            "it looks like you fed [context, x] to the GRU cell"),
    Mistake("decoder_predicts_from_old_state", "decoder_with_attention",
            _with(_DECODER,
                  '''\
        hidden = self.cell(torch.cat([x, context], dim=-1)[:, 0], hidden)
        prediction = self.output(torch.cat([context, hidden.unsqueeze(1)], dim=-1))
        return prediction, hidden, weights
''', '''\
        new_hidden = self.cell(torch.cat([x, context], dim=-1)[:, 0], hidden)
        prediction = self.output(torch.cat([context, query], dim=-1))
        return prediction, new_hidden, weights
'''),
            "it looks like you predicted from the state before the step"),
    Mistake("decoder_weights_squeezed", "decoder_with_attention",
            _with(_DECODER, "hidden, weights", "hidden, weights.squeeze(1)"),
            "weights has shape (3, 5), expected (3, 1, 5)"),
    Mistake("decoder_state_before_context", "decoder_with_attention",
            _with(_DECODER,
                  "self.output(torch.cat([context, hidden.unsqueeze(1)],",
                  "self.output(torch.cat([hidden.unsqueeze(1), context],"),
            "it looks like you concatenated [state, context]"),
    Mistake("decoder_drops_mask", "decoder_with_attention",
            _with(_DECODER, "encoder_states, mask)", "encoder_states)"),
            "it looks like you did not pass the mask to the attention"),
    Mistake("decoder_returns_old_hidden", "decoder_with_attention",
            _with(_DECODER,
                  '''\
        hidden = self.cell(torch.cat([x, context], dim=-1)[:, 0], hidden)
        prediction = self.output(torch.cat([context, hidden.unsqueeze(1)], dim=-1))
''', '''\
        new_hidden = self.cell(torch.cat([x, context], dim=-1)[:, 0], hidden)
        prediction = self.output(torch.cat([context, new_hidden.unsqueeze(1)], dim=-1))
'''),
            "it looks like you returned the old hidden state instead of the updated one"),
    Mistake("teacher_forcing_in_eval", "seq2seq_with_attention",
            _with(_SEQ2SEQ, "self.training and target", "target"),
            "it looks like you used teacher forcing in evaluation mode"),
    Mistake("target_fed_whenever_given", "seq2seq_with_attention",
            _with(_SEQ2SEQ,
                  '''\
            if self.training and target is not None:
                forced = torch.rand(n, 1, 1) < self.teacher_forcing
                x = torch.where(forced, target[:, step:step + 1], prediction)
''', '''\
            if target is not None:
                x = target[:, step:step + 1]
'''),
            "it looks like you used teacher forcing in evaluation mode"),
    Mistake("prediction_not_fed_back", "seq2seq_with_attention",
            _with(_SEQ2SEQ, "            x = prediction\n", "", "1], prediction)", "1], x)"),
            "it looks like you fed the last source point at every step"),
    Mistake("output_length_fixed_to_two", "seq2seq_with_attention",
            _with(_SEQ2SEQ,
                  "torch.arange(self.target_len)", "torch.arange(2)",
                  "range(self.target_len):", "range(2):"),
            "predictions has shape (2, 2, 2), expected (2, 3, 2)"),
    Mistake("starts_from_padding", "seq2seq_with_attention",
            _with(_SEQ2SEQ, "last_step(source, mask)", "source[:, -1:]"),
            "started the decoder from source[:, -1:], which is padding"),
    Mistake("teacher_forcing_with_python_random", "seq2seq_with_attention",
            _with(_SEQ2SEQ, "\nclass", "\nimport random\n\nclass",
                  "torch.rand(n, 1, 1) < self.teacher_forcing",
                  "torch.tensor([[[random.random() < self.teacher_forcing]] for _ in range(n)])"),
            "draw the teacher forcing decision with torch.rand"),
    Mistake("teacher_forcing_one_draw_per_batch", "seq2seq_with_attention",
            _with(_SEQ2SEQ, "torch.rand(n, 1, 1)", "torch.rand(())"),
            "draw one decision per sequence"),
    Mistake("padded_predictions_kept", "seq2seq_with_attention",
            _with(_SEQ2SEQ, "dim=1).masked_fill(~decoding.unsqueeze(-1), 0.0)", "dim=1)"),
            "did not set the predictions of the padded steps (t >= target_lengths[i]) to 0"),
    Mistake("target_mask_one_step_too_long", "seq2seq_with_attention",
            _with(_SEQ2SEQ, "< target_lengths[:,", "<= target_lengths[:,"),
            "kept one step too many"),
    Mistake("decoder_gets_source_mask_only", "seq2seq_with_attention",
            _with(_SEQ2SEQ, "step_mask)", "mask)"),
            "gave the decoder the source mask alone"),
    Mistake("decoder_gets_target_mask_only", "seq2seq_with_attention",
            _with(_SEQ2SEQ, "decoding.unsqueeze(-1) & mask", "decoding.unsqueeze(-1)"),
            "are not row t of (target mask & source mask)"),
]
