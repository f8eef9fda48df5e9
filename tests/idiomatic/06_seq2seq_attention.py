"""Correct answers to lab 06 in other styles: each must get every point and have no finding."""

from catalogue import Variant

VARIANTS = [
    Variant(
        name="seq2seq_mask_per_step_and_zipped_steps",
        cell="seq2seq_with_attention",
        code='''
class Seq2SeqWithAttention(nn.Module):
    """Encoder, attention decoder, and the loop that feeds each prediction back in."""

    def __init__(self, encoder, decoder, target_len, teacher_forcing=0.5):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.target_len = target_len
        self.teacher_forcing = teacher_forcing

    def forward(self, source, target=None, mask=None, target_lengths=None):
        """source (N, Lk, F) -> predictions (N, Lq, F), weights (N, Lq, Lk)."""
        batch, n_keys = source.shape[:2]
        real_keys = torch.ones(batch, 1, n_keys, dtype=torch.bool) if mask is None else mask
        lengths = (torch.full((batch,), self.target_len) if target_lengths is None
                   else target_lengths)
        states, hidden = self.encoder(source, mask)
        x = last_step(source, mask)
        steps = []
        for step in range(self.target_len):
            active = (lengths > step).view(batch, 1, 1)
            prediction, hidden, step_weights = self.decoder(x, hidden, states, real_keys & active)
            steps.append((torch.where(active, prediction, torch.zeros_like(prediction)),
                          step_weights))
            x = prediction
            if self.training and target is not None:
                use_target = torch.rand(batch, 1, 1) < self.teacher_forcing
                x = torch.where(use_target, target[:, step:step + 1], prediction)
        predictions, weights = zip(*steps)
        return torch.cat(predictions, dim=1), torch.cat(weights, dim=1)
''',
    ),
]
