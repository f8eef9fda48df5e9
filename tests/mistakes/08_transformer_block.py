"""Typical mistakes in lab 08: each must lose points and show the message that names it."""

from course.submissions import Mistake
from course.submissions import with_replacements as _with

# Correct answers; each mistake below changes one part of one of them.
_SINUSOIDAL = '''
def sinusoidal_positions(length, d_model):
    if length < 1 or d_model < 1 or d_model % 2 != 0:
        raise ValueError(f"need length >= 1 and an even d_model, got {length}, {d_model}")
    angles = torch.arange(length).float()[:, None] * 10000.0 ** (
        -torch.arange(0, d_model, 2).float() / d_model)
    encoding = torch.zeros(length, d_model)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles)
    return encoding
'''

_ROPE = '''
def apply_rope(x, base=10000.0):
    size = x.shape[-1]
    if size % 2 != 0:
        raise ValueError(f"d={size} is odd")
    frequencies = base ** (-torch.arange(0, size, 2, dtype=x.dtype) / size)
    angles = torch.arange(x.shape[-2], dtype=x.dtype)[:, None] * frequencies
    cos, sin = torch.cos(angles), torch.sin(angles)
    first, second = x[..., 0::2], x[..., 1::2]
    return torch.stack([first * cos - second * sin, first * sin + second * cos], dim=-1).flatten(-2)
'''

_ROPE_ATTENTION = '''
def rope_attention(q, k, v, mask=None):
    q, k = apply_rope(q), apply_rope(k)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
'''

_BLOCK = '''
class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0):
        super().__init__()
        self.n_heads = n_heads
        self.p = dropout
        self.norm1 = nn.LayerNorm(d_model)
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, dropout=dropout, batch_first=True)
        self.dropout1 = nn.Dropout(dropout)
        self.norm2 = nn.LayerNorm(d_model)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        forbidden = None
        if mask is not None:
            forbidden = ~mask
            if forbidden.dim() == 3:
                forbidden = forbidden.repeat_interleave(self.n_heads, dim=0)
        h = self.norm1(x)
        attended, weights = self.self_attn(h, h, h, attn_mask=forbidden, need_weights=True,
                                           average_attn_weights=False)
        x = x + self.dropout1(attended)
        h = self.norm2(x)
        x = x + self.dropout2(self.linear2(self.dropout(torch.relu(self.linear1(h)))))
        return x, weights
'''


_PRE_LN = """        h = self.norm1(x)
        attended, weights = self.self_attn(h, h, h, attn_mask=forbidden, need_weights=True,
                                           average_attn_weights=False)
        x = x + self.dropout1(attended)
        h = self.norm2(x)
        x = x + self.dropout2(self.linear2(self.dropout(torch.relu(self.linear1(h)))))"""
_POST_LN = """        attended, weights = self.self_attn(x, x, x, attn_mask=forbidden,
                                           average_attn_weights=False)
        x = self.norm1(x + self.dropout1(attended))
        h = self.dropout(torch.relu(self.linear1(x)))
        x = self.norm2(x + self.dropout2(self.linear2(h)))"""



MISTAKES = [
    Mistake(
        name="sinusoidal_cos_in_even_columns",
        cell="sinusoidal_positions",
        code=_with(_SINUSOIDAL, "encoding[:, 0::2] = torch.sin", "encoding[:, 0::2] = torch.cos",
                   "encoding[:, 1::2] = torch.cos", "encoding[:, 1::2] = torch.sin"),
        message="put the cosines in the even columns and the sines in the odd ones",
    ),
    Mistake(
        name="sinusoidal_two_halves",
        cell="sinusoidal_positions",
        code=_with(_SINUSOIDAL, """    encoding = torch.zeros(length, d_model)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles)
    return encoding""", "    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)"),
        message="interleaved sin and cos differently from the spec",
    ),
    Mistake(
        name="sinusoidal_exponent_doubled",
        cell="sinusoidal_positions",
        code=_with(_SINUSOIDAL, "-torch.arange(0, d_model, 2).float() / d_model",
                   "-2 * torch.arange(0, d_model, 2).float() / d_model"),
        message="doubled the exponent of the frequencies",
    ),
    Mistake(
        name="sinusoidal_exponent_halved",
        cell="sinusoidal_positions",
        code=_with(_SINUSOIDAL, "-torch.arange(0, d_model, 2).float() / d_model",
                   "-torch.arange(0, d_model // 2).float() / d_model"),
        message="halved the exponent of the frequencies",
    ),
    Mistake(
        name="sinusoidal_does_not_validate",
        cell="sinusoidal_positions",
        code=_with(_SINUSOIDAL, """    if length < 1 or d_model < 1 or d_model % 2 != 0:
        raise ValueError(f"need length >= 1 and an even d_model, got {length}, {d_model}")
""", ""),
        message="sinusoidal_positions(3, 5) raised RuntimeError",
    ),
    Mistake(
        name="rope_two_halves",
        cell="apply_rope",
        code=_with(_ROPE, "first, second = x[..., 0::2], x[..., 1::2]",
                   "first, second = x[..., :size // 2], x[..., size // 2:]",
                   "dim=-1).flatten(-2)", "dim=-2).flatten(-2)"),
        message="paired feature i with feature i + d/2 (the two-halves layout",
    ),
    Mistake(
        name="rope_rotates_backwards",
        cell="apply_rope",
        code=_with(_ROPE, "[first * cos - second * sin, first * sin + second * cos]",
                   "[first * cos + second * sin, second * cos - first * sin]"),
        message="rotated by -a instead of a",
    ),
    Mistake(
        name="rope_positions_from_one",
        cell="apply_rope",
        code=_with(_ROPE, "torch.arange(x.shape[-2], dtype=x.dtype)",
                   "torch.arange(1, x.shape[-2] + 1, dtype=x.dtype)"),
        message="counted the positions from 1 instead of 0",
    ),
    Mistake(
        name="rope_exponent_doubled",
        cell="apply_rope",
        code=_with(_ROPE, "base ** (-torch.arange(0, size, 2, dtype=x.dtype) / size)",
                   "base ** (-2 * torch.arange(0, size, 2, dtype=x.dtype) / size)"),
        message="doubled the exponent of the frequencies (base^(-2 * 2i / d))",
    ),
    Mistake(
        name="rope_does_not_validate",
        cell="apply_rope",
        code=_with(_ROPE, """    if size % 2 != 0:
        raise ValueError(f"d={size} is odd")
""", ""),
        message="apply_rope(x with d=5) raised RuntimeError",
    ),
    Mistake(
        name="rope_attention_rotates_values",
        cell="rope_attention",
        code=_with(_ROPE_ATTENTION, "q, k = apply_rope(q), apply_rope(k)",
                   "q, k, v = apply_rope(q), apply_rope(k), apply_rope(v)"),
        message="rotated the values too: RoPE rotates only the queries and the keys",
    ),
    Mistake(
        name="rope_attention_rotates_only_queries",
        cell="rope_attention",
        code=_with(_ROPE_ATTENTION, "q, k = apply_rope(q), apply_rope(k)", "q = apply_rope(q)"),
        message="rotated only the queries",
    ),
    Mistake(
        name="rope_attention_without_scaling",
        cell="rope_attention",
        code=_with(_ROPE_ATTENTION, " / math.sqrt(q.shape[-1])", ""),
        message="forgot to divide the scores by sqrt(d)",
    ),
    Mistake(
        name="rope_attention_inverted_mask",
        cell="rope_attention",
        code=_with(_ROPE_ATTENTION, "masked_fill(~mask,", "masked_fill(mask,"),
        message="is the mask inverted? here True means *may attend*",
    ),
    Mistake(
        name="block_post_ln",
        cell="transformer_block",
        code=_with(_BLOCK, _PRE_LN, _POST_LN),
        message="normalised after the residual (post-LN",
    ),
    Mistake(
        name="block_residual_after_norm",
        cell="transformer_block",
        code=_with(_BLOCK, """        h = self.norm1(x)
        attended, weights = self.self_attn(h, h, h,""", """        x = self.norm1(x)
        attended, weights = self.self_attn(x, x, x,""",
                   """        h = self.norm2(x)
        x = x + self.dropout2(self.linear2(self.dropout(torch.relu(self.linear1(h)))))""",
                   """        x = self.norm2(x)
        x = x + self.dropout2(self.linear2(self.dropout(torch.relu(self.linear1(x)))))"""),
        message="added the residual to the normalised x",
    ),
    Mistake(
        name="block_torch_mask_not_inverted",
        cell="transformer_block",
        code=_with(_BLOCK, "forbidden = ~mask", "forbidden = mask"),
        message="did you pass the mask straight to nn.MultiheadAttention?",
    ),
    Mistake(
        name="block_mask_heads_in_wrong_order",
        cell="transformer_block",
        code=_with(_BLOCK, "forbidden.repeat_interleave(self.n_heads, dim=0)",
                   "forbidden.repeat(self.n_heads, 1, 1)"),
        message="output with a padding mask (N, L, L)",
    ),
    Mistake(
        name="block_dropout_in_eval",
        cell="transformer_block",
        code=_with(_BLOCK, "x = x + self.dropout1(attended)",
                   "x = x + F.dropout(attended, p=self.p)"),
        message="TransformerBlock(dropout=0.5) is random in eval mode",
    ),
]
