"""Right answers written in other styles than the reference: they must keep full marks.

Two per exercise: einsum, `torch.where`, `-1e9` or `finfo.min` instead of `-inf`, chunk and
stack, a loop over heads, `load_state_dict`; some print, warn or write to stderr on the way.
Each is the full text of an answer cell.
"""
from __future__ import annotations

ALTERNATIVES: dict[str, list[str]] = {
    "raw_scores": [
        "def raw_scores(q, k):\n    return torch.einsum('...id,...jd->...ij', q, k)\n",
        "def raw_scores(q, k):\n    print('computing scores for', tuple(q.shape))\n    return torch.matmul(q, k.mT)\n",
    ],
    "scaled_scores": [
        "def scaled_scores(q, k):\n    return (q @ k.transpose(-1, -2)) * q.size(-1) ** -0.5\n",
        "def scaled_scores(q, k):\n    import sys, warnings\n    warnings.warn('a harmless warning')\n"
        "    print('a line on stderr', file=sys.stderr)\n"
        "    return (q / math.sqrt(q.shape[-1])) @ k.transpose(-2, -1)\n",
    ],
    "quick_check_answer": ["quick_check_answer = 'b'\n", "quick_check_answer = ' B '\n"],
    "scaled_dot_product_attention": [
        "def scaled_dot_product_attention(q, k, v, mask=None):\n"
        "    s = torch.einsum('...qd,...kd->...qk', q, k) / q.shape[-1] ** 0.5\n"
        "    if mask is not None:\n        s = torch.where(mask, s, torch.tensor(-1e9, dtype=s.dtype))\n"
        "    w = s.softmax(-1)\n    return torch.einsum('...qk,...kd->...qd', w, v), w\n",
        "def scaled_dot_product_attention(q, k, v, mask=None):\n"
        "    s = q @ k.mT / math.sqrt(q.shape[-1])\n"
        "    if mask is not None:\n        s = s.masked_fill(mask.logical_not(), torch.finfo(s.dtype).min)\n"
        "    s = s - s.amax(-1, keepdim=True)\n    w = s.exp() / s.exp().sum(-1, keepdim=True)\n"
        "    return w @ v, w\n",
    ],
    "split_heads": [
        "def split_heads(x, num_heads):\n"
        "    if x.shape[-1] % num_heads:\n"
        "        raise ValueError(f'cannot split {x.shape[-1]} features into {num_heads} heads')\n"
        "    return torch.stack(x.chunk(num_heads, dim=-1), dim=1)\n",
        "def split_heads(x, num_heads):\n    import warnings\n    B, T, D = x.shape\n"
        "    print('splitting', tuple(x.shape))\n    warnings.warn('just a warning')\n"
        "    if D % num_heads != 0:\n        raise ValueError(f'{D} is not divisible by {num_heads}')\n"
        "    return x.reshape(B, T, num_heads, D // num_heads).permute(0, 2, 1, 3)\n",
    ],
    "concat_heads": [
        "def concat_heads(x):\n    return torch.cat(x.unbind(1), dim=-1)\n",
        "def concat_heads(x):\n    B, H, T, d = x.shape\n    return x.permute(0, 2, 1, 3).contiguous().view(B, T, H * d)\n",
    ],
    "MultiHeadAttention": [
        # a loop over heads: slower, but right
        "class MultiHeadAttention(nn.Module):\n"
        "    def __init__(self, d_model, num_heads, bias=True):\n"
        "        super().__init__()\n"
        "        if d_model % num_heads:\n"
        "            raise ValueError(f'd_model {d_model} must be divisible by num_heads {num_heads}')\n"
        "        self.num_heads, self.d_head = num_heads, d_model // num_heads\n"
        "        self.W_q = nn.Linear(d_model, d_model, bias=bias)\n"
        "        self.W_k = nn.Linear(d_model, d_model, bias=bias)\n"
        "        self.W_v = nn.Linear(d_model, d_model, bias=bias)\n"
        "        self.W_o = nn.Linear(d_model, d_model, bias=bias)\n\n"
        "    def forward(self, query, key, value, mask=None):\n"
        "        q, k, v = self.W_q(query), self.W_k(key), self.W_v(value)\n"
        "        B, T_q, T_k, H = q.shape[0], q.shape[1], k.shape[1], self.num_heads\n"
        "        outs, ws = [], []\n"
        "        for h in range(H):\n"
        "            part = slice(h * self.d_head, (h + 1) * self.d_head)\n"
        "            s = q[..., part] @ k[..., part].transpose(-2, -1) / self.d_head ** 0.5\n"
        "            if mask is not None:\n"
        "                m = torch.broadcast_to(mask, (B, H, T_q, T_k))[:, h]\n"
        "                s = torch.where(m, s, torch.full_like(s, -1e9))\n"
        "            w = s.softmax(-1)\n"
        "            outs.append(w @ v[..., part])\n"
        "            ws.append(w)\n"
        "        return self.W_o(torch.cat(outs, dim=-1)), torch.stack(ws, dim=1)\n",
        # einsum, batched, masked with the dtype's most negative number
        "class MultiHeadAttention(nn.Module):\n"
        "    def __init__(self, d_model, num_heads, bias=True):\n"
        "        super().__init__()\n"
        "        if d_model % num_heads != 0:\n"
        "            raise ValueError(f'{d_model} features cannot be split into {num_heads} heads')\n"
        "        self.num_heads = num_heads\n"
        "        self.d_head = d_model // num_heads\n"
        "        for name in ('W_q', 'W_k', 'W_v', 'W_o'):\n"
        "            setattr(self, name, nn.Linear(d_model, d_model, bias=bias))\n\n"
        "    def _split(self, x):\n"
        "        return x.unflatten(-1, (self.num_heads, self.d_head)).transpose(1, 2)\n\n"
        "    def forward(self, query, key, value, mask=None):\n"
        "        q, k, v = self._split(self.W_q(query)), self._split(self.W_k(key)), self._split(self.W_v(value))\n"
        "        s = torch.einsum('bhqd,bhkd->bhqk', q, k) / math.sqrt(self.d_head)\n"
        "        if mask is not None:\n"
        "            s = s.masked_fill(~mask, torch.finfo(s.dtype).min)\n"
        "        w = torch.softmax(s, dim=-1)\n"
        "        out = torch.einsum('bhqk,bhkd->bqhd', w, v).flatten(-2)\n"
        "        return self.W_o(out), w\n",
    ],
    "to_torch_mha": [
        "def to_torch_mha(mha):\n"
        "    d = mha.W_q.weight.shape[0]\n"
        "    has_bias = mha.W_q.bias is not None\n"
        "    m = nn.MultiheadAttention(d, mha.num_heads, bias=has_bias, batch_first=True).to(mha.W_q.weight.dtype)\n"
        "    state = {'in_proj_weight': torch.cat([mha.W_q.weight, mha.W_k.weight, mha.W_v.weight]).detach().clone(),\n"
        "             'out_proj.weight': mha.W_o.weight.detach().clone()}\n"
        "    if has_bias:\n"
        "        state['in_proj_bias'] = torch.cat([mha.W_q.bias, mha.W_k.bias, mha.W_v.bias]).detach().clone()\n"
        "        state['out_proj.bias'] = mha.W_o.bias.detach().clone()\n"
        "    m.load_state_dict(state)\n"
        "    return m\n",
        "def to_torch_mha(mha):\n"
        "    layers = [mha.W_q, mha.W_k, mha.W_v]\n"
        "    m = nn.MultiheadAttention(mha.W_q.in_features, num_heads=mha.num_heads, batch_first=True,\n"
        "                              bias=mha.W_o.bias is not None, dtype=mha.W_o.weight.dtype)\n"
        "    m.in_proj_weight.data = torch.cat([l.weight.data for l in layers]).clone()\n"
        "    m.out_proj.weight.data = mha.W_o.weight.data.clone()\n"
        "    if mha.W_o.bias is not None:\n"
        "        m.in_proj_bias.data = torch.cat([l.bias.data for l in layers]).clone()\n"
        "        m.out_proj.bias.data = mha.W_o.bias.data.clone()\n"
        "    return m\n",
    ],
}
