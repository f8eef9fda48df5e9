"""Correct answers to lab 11 in other styles: each must get every point and have no finding."""

from catalogue import Variant

VARIANTS = [
    Variant(
        name="attention_with_einsum_and_a_shifted_softmax",
        cell="attention",
        code='''
class Attention(nn.Module):
    """Multi-head attention: queries from x, keys and values from memory."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        if n_heads < 1 or d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not a multiple of n_heads={n_heads}")
        self.n_heads = n_heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, x, memory, mask=None):
        heads = self.n_heads
        q, k, v = (t.unflatten(-1, (heads, -1)) for t in
                   (self.w_q(x), self.w_k(memory), self.w_v(memory)))  # (N, L, h, d_head)
        scores = torch.einsum("nqhd,nkhd->nhqk", q, k) / q.shape[-1] ** 0.5
        if mask is None:
            mask = torch.ones_like(scores, dtype=torch.bool)
        hidden = scores.masked_fill(~mask, float("-inf"))
        shift = hidden.detach().amax(-1, keepdim=True).clamp(min=torch.finfo(scores.dtype).min)
        exps = (hidden - shift).exp()
        totals = exps.sum(-1, keepdim=True)
        weights = exps / torch.where(totals > 0, totals, torch.ones_like(totals))
        context = torch.einsum("nhqk,nkhd->nqhd", weights, v).flatten(-2)
        return self.w_o(context), weights
''',
    ),
    Variant(
        name="copy_from_torch_through_a_state_dict",
        cell="copy_from_torch",
        code='''
def copy_from_torch(model, reference):
    """Rename nn.Transformer's state to the lab's names and load it."""
    renames = [("encoder.layers.", "encoder_blocks."), ("decoder.layers.", "decoder_blocks."),
               ("encoder.norm.", "encoder_norm."), ("decoder.norm.", "decoder_norm."),
               ("self_attn.", "self_attention."), ("multihead_attn.", "cross_attention."),
               ("out_proj.", "w_o."), ("linear1.", "feed_forward.0."),
               ("linear2.", "feed_forward.2.")]
    state = {}
    for name, value in reference.state_dict().items():
        for old, new in renames:
            name = name.replace(old, new)
        if "in_proj_" in name:
            prefix, kind = name.split("in_proj_")
            for role, part in zip("qkv", value.chunk(3)):
                state[f"{prefix}w_{role}.{kind}"] = part
        else:
            state[name] = value
    model.load_state_dict(state)
    return model
''',
    ),
    Variant(
        name="train_with_mse_loss_module",
        cell="train",
        code='''
def train(model, batches, epochs, lr=0.01):
    """Teacher-forced training with nn.MSELoss and AdamW."""
    criterion = nn.MSELoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    history = []
    model.train()
    for epoch in range(epochs):
        seen, summed = 0, 0.0
        for source, target in batches:
            optimizer.zero_grad(set_to_none=True)
            loss = criterion(model(source, target), target)
            loss.backward()
            optimizer.step()
            seen += source.shape[0]
            summed += float(loss) * source.shape[0]
        history.append(summed / seen)
    return history
''',
    ),
]
