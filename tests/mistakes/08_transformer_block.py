"""Typical mistakes in lab 08: each must lose points and show the message that names it."""

from catalogue import Mistake
from catalogue import with_replacements as _with

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
def apply_rope(x, start=0, base=10000.0):
    size = x.shape[-1]
    if size % 2 != 0:
        raise ValueError(f"d_head={size} is odd")
    if not isinstance(start, int) or start < 0:
        raise ValueError(f"bad start={start}")
    frequencies = base ** (-torch.arange(0, size, 2, dtype=x.dtype) / size)
    angles = torch.arange(start, start + x.shape[-2], dtype=x.dtype)[:, None] * frequencies
    cos, sin = torch.cos(angles), torch.sin(angles)
    first, second = x[..., 0::2], x[..., 1::2]
    return torch.stack([first * cos - second * sin, first * sin + second * cos], dim=-1).flatten(-2)
'''

_ATTENTION = '''
def attention(q, k, v, mask=None, causal=False, rope=False):
    lq, lk = q.shape[-2], k.shape[-2]
    if lq > lk:
        raise ValueError(f"need Lq <= Lk, got Lq={lq}, Lk={lk}")
    if rope:
        q, k = apply_rope(q, start=lk - lq), apply_rope(k)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    allowed = torch.ones(lq, lk, dtype=torch.bool)
    if causal:
        allowed = allowed.tril(diagonal=lk - lq)
    if mask is not None:
        allowed = allowed & mask
    scores = scores.masked_fill(~allowed, float("-inf"))
    has_key = allowed.any(dim=-1, keepdim=True)
    scores = scores.masked_fill(~has_key, 0.0)
    weights = torch.softmax(scores, dim=-1).masked_fill(~allowed, 0.0)
    return weights @ v, weights
'''

_BLOCK = '''
class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, rope=False):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError(f"d_model={d_model} is not a multiple of n_heads={n_heads}")
        self.n_heads, self.rope, self.p = n_heads, rope, dropout
        self.norm1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.norm2 = nn.LayerNorm(d_model)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout2 = nn.Dropout(dropout)

    def heads(self, t):
        n, length, _ = t.shape
        return t.view(n, length, self.n_heads, -1).transpose(1, 2)

    def forward(self, x, mask=None, causal=False):
        n, length, d_model = x.shape
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)
        h = self.norm1(x)
        q, k, v = (self.heads(t) for t in self.qkv(h).chunk(3, dim=-1))
        context, weights = attention(q, k, v, mask=mask, causal=causal, rope=self.rope)
        attended = self.out(context.transpose(1, 2).reshape(n, length, d_model))
        x = x + self.dropout1(attended)
        h = self.norm2(x)
        x = x + self.dropout2(self.linear2(self.dropout(torch.relu(self.linear1(h)))))
        return x, weights
'''


_PRE_LN = """        h = self.norm1(x)
        q, k, v = (self.heads(t) for t in self.qkv(h).chunk(3, dim=-1))
        context, weights = attention(q, k, v, mask=mask, causal=causal, rope=self.rope)
        attended = self.out(context.transpose(1, 2).reshape(n, length, d_model))
        x = x + self.dropout1(attended)
        h = self.norm2(x)
        x = x + self.dropout2(self.linear2(self.dropout(torch.relu(self.linear1(h)))))"""
_POST_LN = """        q, k, v = (self.heads(t) for t in self.qkv(x).chunk(3, dim=-1))
        context, weights = attention(q, k, v, mask=mask, causal=causal, rope=self.rope)
        attended = self.out(context.transpose(1, 2).reshape(n, length, d_model))
        x = self.norm1(x + self.dropout1(attended))
        h = self.dropout(torch.relu(self.linear1(x)))
        x = self.norm2(x + self.dropout2(self.linear2(h)))"""



# The catalogue's correct answers, by cell: each gets every point (tests/lessons/test_autograde.py).
BASES = {
    "sinusoidal_positions": _SINUSOIDAL,
    "apply_rope": _ROPE,
    "attention": _ATTENTION,
    "transformer_block": _BLOCK,
}

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
        message="paired feature i with feature i + d_head/2 (the two-halves layout",
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
        code=_with(_ROPE, "torch.arange(start, start + x.shape[-2], dtype=x.dtype)",
                   "torch.arange(start + 1, start + x.shape[-2] + 1, dtype=x.dtype)"),
        message="counted the positions from 1 instead of 0",
    ),
    Mistake(
        name="rope_exponent_doubled",
        cell="apply_rope",
        code=_with(_ROPE, "base ** (-torch.arange(0, size, 2, dtype=x.dtype) / size)",
                   "base ** (-2 * torch.arange(0, size, 2, dtype=x.dtype) / size)"),
        message="doubled the exponent of the frequencies (base^(-2 * 2i / d_head))",
    ),
    Mistake(
        name="rope_ignores_start",
        cell="apply_rope",
        code=_with(_ROPE, "torch.arange(start, start + x.shape[-2], dtype=x.dtype)",
                   "torch.arange(x.shape[-2], dtype=x.dtype)"),
        message="ignored start: the first row of x is at position start, not 0",
    ),
    Mistake(
        name="rope_does_not_validate",
        cell="apply_rope",
        code=_with(_ROPE, """    if size % 2 != 0:
        raise ValueError(f"d_head={size} is odd")
""", ""),
        message="apply_rope(x with d_head=5) raised RuntimeError",
    ),
    Mistake(
        name="rope_accepts_negative_start",
        cell="apply_rope",
        code=_with(_ROPE, """    if not isinstance(start, int) or start < 0:
        raise ValueError(f"bad start={start}")
""", ""),
        message="apply_rope(x, start=-1) did not raise ValueError",
    ),
    Mistake(
        name="attention_rotates_values",
        cell="attention",
        code=_with(_ATTENTION, "q, k = apply_rope(q, start=lk - lq), apply_rope(k)",
                   "q, k, v = apply_rope(q, start=lk - lq), apply_rope(k), apply_rope(v)"),
        message="rotated the values too: RoPE rotates only the queries and the keys",
    ),
    Mistake(
        name="attention_rotates_only_queries",
        cell="attention",
        code=_with(_ATTENTION, "q, k = apply_rope(q, start=lk - lq), apply_rope(k)",
                   "q = apply_rope(q, start=lk - lq)"),
        message="rotated only the queries",
    ),
    Mistake(
        name="attention_without_scaling",
        cell="attention",
        code=_with(_ATTENTION, " / math.sqrt(q.shape[-1])", ""),
        message="forgot to divide the scores by sqrt(d_head)",
    ),
    Mistake(
        name="attention_inverted_mask",
        cell="attention",
        code=_with(_ATTENTION, 'masked_fill(~allowed, float("-inf"))',
                   'masked_fill(allowed, float("-inf"))',
                   "masked_fill(~allowed, 0.0)", "masked_fill(allowed, 0.0)"),
        message="is the mask inverted? Here True means *may attend*",
    ),
    Mistake(
        name="attention_scores_mask_inverted",
        cell="attention",
        code=_with(_ATTENTION, 'masked_fill(~allowed, float("-inf"))',
                   'masked_fill(allowed, float("-inf"))'),
        message="you inverted the mask in one of its two uses",
    ),
    Mistake(
        name="attention_weights_mask_inverted",
        cell="attention",
        code=_with(_ATTENTION, "masked_fill(~allowed, 0.0)", "masked_fill(allowed, 0.0)"),
        message="you inverted the mask in one of its two uses",
    ),
    Mistake(
        name="attention_queries_from_position_zero",
        cell="attention",
        code=_with(_ATTENTION, "apply_rope(q, start=lk - lq)", "apply_rope(q)"),
        message="rotated the 2 queries as positions 0 and 1",
    ),
    Mistake(
        name="attention_causal_from_top_left",
        cell="attention",
        code=_with(_ATTENTION, "allowed.tril(diagonal=lk - lq)", "allowed.tril()"),
        message="made the causal mask an (Lq, Lk) lower triangle from its top-left corner",
    ),
    Mistake(
        name="attention_fully_masked_rows_nan",
        cell="attention",
        code=_with(_ATTENTION, """    has_key = allowed.any(dim=-1, keepdim=True)
    scores = scores.masked_fill(~has_key, 0.0)
""", "", ".masked_fill(~allowed, 0.0)", ""),
        message="query 1, whose keys are all masked, has weights or a context that are not 0",
    ),
    Mistake(
        name="attention_fully_masked_rows_uniform",
        cell="attention",
        code=_with(_ATTENTION, ".masked_fill(~allowed, 0.0)", ""),
        message="query 1, whose keys are all masked, has weights or a context that are not 0",
    ),
    Mistake(
        name="attention_repairs_nan_with_where",
        cell="attention",
        code=_with(_ATTENTION, """    has_key = allowed.any(dim=-1, keepdim=True)
    scores = scores.masked_fill(~has_key, 0.0)
    weights = torch.softmax(scores, dim=-1).masked_fill(~allowed, 0.0)
""", """    weights = torch.softmax(scores, dim=-1)
    weights = torch.where(torch.isnan(weights), torch.zeros_like(weights), weights)
"""),
        message="a NaN was created and then repaired (nan_to_num, or masked_fill / where over it)",
    ),
    Mistake(
        name="attention_repairs_nan_with_masked_fill",
        cell="attention",
        code=_with(_ATTENTION, """    scores = scores.masked_fill(~has_key, 0.0)
""", ""),
        message="the course's rule is to never create it",
    ),
    Mistake(
        name="attention_makes_nan_in_place_and_repairs_it",
        cell="attention",
        code=_with(_ATTENTION, """    scores = scores.masked_fill(~has_key, 0.0)
""", """    scores = scores.clone()
    scores.sub_(scores.amax(-1, keepdim=True))  # -inf - (-inf) on a row with no key: NaN
    scores = scores.nan_to_num(nan=0.0)
"""),
        message="(`sub_` returned a NaN",
    ),
    Mistake(
        name="attention_accepts_more_queries_than_keys",
        cell="attention",
        code=_with(_ATTENTION, """    if lq > lk:
        raise ValueError(f"need Lq <= Lk, got Lq={lq}, Lk={lk}")
""", ""),
        message="attention with Lq=5 > Lk=3",
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
        q, k, v = (self.heads(t) for t in self.qkv(h).chunk(3, dim=-1))""",
                   """        x = self.norm1(x)
        q, k, v = (self.heads(t) for t in self.qkv(x).chunk(3, dim=-1))""",
                   """        h = self.norm2(x)
        x = x + self.dropout2(self.linear2(self.dropout(torch.relu(self.linear1(h)))))""",
                   """        x = self.norm2(x)
        x = x + self.dropout2(self.linear2(self.dropout(torch.relu(self.linear1(x)))))"""),
        message="added the residual to the normalised x",
    ),
    Mistake(
        name="block_heads_split_wrong",
        cell="transformer_block",
        code=_with(_BLOCK, "return t.view(n, length, self.n_heads, -1).transpose(1, 2)",
                   "return t.view(n, length, -1, self.n_heads).permute(0, 3, 1, 2)"),
        message="output of block(x) (nn.TransformerEncoderLayer with your weights)",
    ),
    Mistake(
        name="block_ignores_rope",
        cell="transformer_block",
        code=_with(_BLOCK, "rope=self.rope)", "rope=False)"),
        message="TransformerBlock(rope=True) gives the output of rope=False",
    ),
    Mistake(
        name="block_mask_without_head_axis",
        cell="transformer_block",
        code=_with(_BLOCK, """        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)
""", ""),
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
