"""The model families users bring (recurrent nets, transformers and their inference fast paths,
ResNet / MobileNet / ConvNeXt / UNet / ViT style vision nets, a 1-D audio net, PixelShuffle,
weight / spectral norm, an EmbeddingBag recommender, a VAE) train and run inference on vk with
no CPU fallback and track the same model on the CPU.

Each case builds its model on the CPU from a fixed seed, deep-copies it to vk, and runs forward +
backward + two optimizer steps on both devices under `strict_native` (TORCH_VK_FALLBACK=error
semantics), comparing outputs, losses and parameters after every step; then it runs eval-mode
inference under torch.no_grad(), which for transformers takes PyTorch's fused "fast path" ops
(_transformer_encoder_layer_fwd, _native_multi_head_attention, ...) on vk as on CPU/CUDA.
Sizes are tiny: lavapipe runs ~20 us per dispatch.
"""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parametrizations
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, PackedSequence
from torch.testing import assert_close

import torch_vk

VK = torch.device("vk")
STEPS = 2

# fp32 tolerances as in test_models.py / test_training.py: reductions sum in a different order
# than the CPU's, and the rounding differences are carried through the optimizer updates.
LOSS_TOL = dict(atol=1e-5, rtol=1e-4)
PARAM_TOL = dict(atol=1e-4, rtol=1e-4)


def tensors_of(value):
    """The tensors of a (possibly nested) output: tuples, lists, dicts, PackedSequence."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, PackedSequence):
        return [value.data]  # batch_sizes / indices are bookkeeping, compared via pad_packed
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in tensors_of(v)]
    if isinstance(value, dict):
        return [t for k in sorted(value) for t in tensors_of(value[k])]
    return []


def default_loss(out, _inputs):
    # Asymmetric in the outputs so every output element gets a distinct gradient.
    total = 0
    for t in tensors_of(out):
        if t.is_floating_point():
            w = torch.linspace(-1.0, 1.0, t.numel(), device=t.device).view(t.shape)
            total = total + (t * w).sum() / t.numel() + (t * t).mean()
    return total


def to_device(inputs, device):
    if isinstance(inputs, torch.Tensor):
        return inputs.to(device)
    if isinstance(inputs, (tuple, list)):
        return type(inputs)(to_device(x, device) for x in inputs)
    return inputs


def make_optimizer(name, params):
    # Adam's eps is 1e-5 as in test_models.py: parameters whose exact gradient is zero (a bias
    # before a norm) get rounding noise, which eps=1e-8 would turn into full-size random steps.
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3, eps=1e-5)
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9)
    raise ValueError(name)


def check_model(model, inputs, forward=None, loss_fn=default_loss, optimizer="adam",
                eval_inputs=None, eval_forward=None, steps=STEPS):
    """Trains `model` and a vk deep copy side by side for `steps` steps, then compares eval-mode
    no_grad inference. `forward(model, *inputs)` defaults to model(*inputs). Returns the vk
    dispatch count of the last training step."""
    forward = forward or (lambda m, *a: m(*a))
    eval_forward = eval_forward or forward
    eval_inputs = inputs if eval_inputs is None else eval_inputs
    vk_model = copy.deepcopy(model).to(VK)
    cpu_opt = make_optimizer(optimizer, model.parameters())
    vk_opt = make_optimizer(optimizer, vk_model.parameters())
    model.train()
    vk_model.train()
    dispatches = 0
    for step in range(steps):
        results = []
        for m, opt, dev in ((model, cpu_opt, "cpu"), (vk_model, vk_opt, VK)):
            if dev == VK:
                torch.vk.synchronize()
                before = torch_vk.stats()["dispatches"]
            args = to_device(inputs, dev)
            opt.zero_grad(set_to_none=True)
            out = forward(m, *args)
            loss = loss_fn(out, args)
            loss.backward()
            opt.step()
            if dev == VK:
                torch.vk.synchronize()
                dispatches = torch_vk.stats()["dispatches"] - before
            results.append((out, loss.detach()))
        (cpu_out, cpu_loss), (vk_out, vk_loss) = results
        assert vk_loss.device.type == "vk"
        assert_close(vk_loss.cpu(), cpu_loss, **LOSS_TOL, msg=lambda m: f"step {step} loss: {m}")
        vk_tensors, cpu_tensors = tensors_of(vk_out), tensors_of(cpu_out)
        assert len(vk_tensors) == len(cpu_tensors)
        for i, (a, e) in enumerate(zip(vk_tensors, cpu_tensors)):
            assert a.device.type == "vk", f"output {i} on {a.device}"
            assert_close(a.detach().cpu(), e.detach(), **PARAM_TOL, msg=lambda m: f"step {step} out {i}: {m}")
        for (name, p_cpu), p_vk in zip(model.named_parameters(), vk_model.parameters()):
            assert p_vk.device.type == "vk"
            assert_close(p_vk.detach().cpu(), p_cpu.detach(), **PARAM_TOL,
                         msg=lambda m: f"step {step}, {name}: {m}")
    for (name, b_cpu), b_vk in zip(model.named_buffers(), vk_model.buffers()):
        assert_close(b_vk.cpu(), b_cpu, **PARAM_TOL, msg=lambda m: f"buffer {name}: {m}")
    model.eval()
    vk_model.eval()
    with torch.no_grad():
        expected = eval_forward(model, *eval_inputs)
        actual = eval_forward(vk_model, *to_device(eval_inputs, VK))
    for i, (a, e) in enumerate(zip(tensors_of(actual), tensors_of(expected))):
        assert a.device.type == "vk"
        assert_close(a.cpu(), e, **PARAM_TOL, msg=lambda m: f"eval out {i}: {m}")
    return dispatches


def randn(*shape, seed=1):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# ----------------------------------------------------------------------------- recurrent nets

RNN_KINDS = {
    "lstm": lambda **kw: nn.LSTM(5, 6, **kw),
    "lstm_proj": lambda **kw: nn.LSTM(5, 6, proj_size=3, **kw),
    "gru": lambda **kw: nn.GRU(5, 6, **kw),
    "rnn_tanh": lambda **kw: nn.RNN(5, 6, nonlinearity="tanh", **kw),
    "rnn_relu": lambda **kw: nn.RNN(5, 6, nonlinearity="relu", **kw),
}


@pytest.mark.parametrize("kind,batch_first", [(kind, True) for kind in RNN_KINDS] +
                         [("lstm_proj", False), ("gru", False), ("rnn_relu", False)])
def test_rnn_stack(kind, batch_first, strict_native):
    torch.manual_seed(0)
    rnn = RNN_KINDS[kind](num_layers=2, bidirectional=True, batch_first=batch_first)
    x = randn(3, 4, 5) if batch_first else randn(4, 3, 5)
    check_model(rnn, (x,))


@pytest.mark.parametrize("kind", ["lstm", "lstm_proj", "gru", "rnn_tanh"])
def test_rnn_packed_sequence(kind, strict_native):
    torch.manual_seed(0)
    rnn = RNN_KINDS[kind](num_layers=2, bidirectional=True, batch_first=True)
    x = randn(3, 4, 5)
    lengths = torch.tensor([2, 4, 3])

    def forward(m, x):
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, hidden = m(packed)
        padded, out_lengths = pad_packed_sequence(out, batch_first=True)
        assert out_lengths.tolist() == lengths.tolist()
        return padded, hidden

    check_model(rnn, (x,), forward=forward)


def test_rnn_initial_state(strict_native):
    torch.manual_seed(0)
    lstm = nn.LSTM(5, 6, num_layers=2, proj_size=4)
    x, h0, c0 = randn(4, 3, 5), randn(2, 3, 4, seed=2), randn(2, 3, 6, seed=3)
    check_model(lstm, (x, (h0, c0)))


class CellLoop(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.cell = {"lstm": nn.LSTMCell, "gru": nn.GRUCell, "rnn": nn.RNNCell}[kind](5, 6)
        self.head = nn.Linear(6, 2)

    def forward(self, x):
        h = torch.zeros(x.size(1), 6, device=x.device)
        state = (h, h) if self.kind == "lstm" else h
        outs = []
        for t in range(x.size(0)):
            state = self.cell(x[t], state)
            outs.append(state[0] if self.kind == "lstm" else state)
        return self.head(torch.stack(outs))


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
def test_rnn_cells(kind, strict_native):
    torch.manual_seed(0)
    check_model(CellLoop(kind), (randn(3, 2, 5),))


# ----------------------------------------------------------------------------- transformers

def key_padding_mask(batch, seq, lengths):
    return torch.arange(seq).expand(batch, seq) >= torch.tensor(lengths).unsqueeze(1)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder(norm_first, activation, strict_native):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=24, dropout=0.0, activation=activation,
                                       batch_first=True, norm_first=norm_first)
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(16), enable_nested_tensor=False)
    x = randn(2, 5, 16)
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    check_model(enc, (x,), forward=lambda m, x: m(x, mask=causal.to(x.device), is_causal=True))
    check_model(copy.deepcopy(enc), (x,), steps=1)


@pytest.mark.parametrize("nested", [False, True])
def test_transformer_encoder_padding_mask(nested, strict_native):
    """With a key padding mask the eval fast path packs the batch into a nested tensor
    (_nested_tensor_from_mask) when enable_nested_tensor is set."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=24, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=nested)
    x = randn(3, 5, 16)
    mask = key_padding_mask(3, 5, [5, 3, 2])

    def forward(m, x, mask):
        out = m(x, src_key_padding_mask=mask)
        return out.masked_fill(mask.unsqueeze(-1), 0.0)  # padded rows are unspecified

    check_model(enc, (x, mask), forward=forward)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_full(norm_first, strict_native):
    torch.manual_seed(0)
    model = nn.Transformer(16, 4, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=24,
                           dropout=0.0, batch_first=True, norm_first=norm_first,
                           activation="gelu" if norm_first else "relu")
    src, tgt = randn(2, 5, 16), randn(2, 4, 16, seed=2)
    src_pad = key_padding_mask(2, 5, [5, 3])
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(4)

    def forward(m, src, tgt, src_pad):
        return m(src, tgt, tgt_mask=tgt_mask.to(src.device), src_key_padding_mask=src_pad,
                 memory_key_padding_mask=src_pad, tgt_is_causal=True)

    check_model(model, (src, tgt, src_pad), forward=forward)


def test_transformer_decoder_seq_first(strict_native):
    torch.manual_seed(0)
    layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
    dec = nn.TransformerDecoder(layer, 2)
    tgt, memory = randn(4, 2, 8), randn(3, 2, 8, seed=2)
    check_model(dec, (tgt, memory))


# The inference fast path (_native_multi_head_attention) needs batch_first; seq-first runs once.
@pytest.mark.parametrize("batch_first,need_weights,average",
                         [(True, True, True), (True, True, False), (True, False, True), (False, True, True)])
def test_multihead_attention(need_weights, average, batch_first, strict_native):
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(16, 4, batch_first=batch_first)
    x = randn(2, 5, 16) if batch_first else randn(5, 2, 16)
    attn_mask = torch.ones(5, 5, dtype=torch.bool).triu(1)  # causal, boolean like the padding mask
    pad = key_padding_mask(2, 5, [5, 4])

    def forward(m, x, attn_mask, pad):
        return m(x, x, x, need_weights=need_weights, average_attn_weights=average,
                 attn_mask=attn_mask, key_padding_mask=pad)

    def self_attention(m, x, attn_mask, pad):  # the fast path needs query is key is value
        out, w = m(x, x, x, need_weights=need_weights, average_attn_weights=average,
                   key_padding_mask=pad)
        pad_rows = pad.unsqueeze(-1) if batch_first else pad.t().unsqueeze(-1)
        return out.masked_fill(pad_rows, 0.0), w

    check_model(mha, (x, attn_mask, pad), forward=forward)
    check_model(copy.deepcopy(mha), (x, attn_mask, pad), forward=self_attention, steps=1)
    def unmasked(m, x, attn_mask, pad):
        return m(x, x, x, need_weights=need_weights, average_attn_weights=average)

    check_model(copy.deepcopy(mha), (x, None, None), forward=unmasked, steps=1)


def test_multihead_attention_kdim_vdim(strict_native):
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, kdim=6, vdim=5, batch_first=True)
    q, k, v = randn(2, 3, 8), randn(2, 4, 6, seed=2), randn(2, 4, 5, seed=3)
    check_model(mha, (q, k, v), forward=lambda m, q, k, v: m(q, k, v, need_weights=True))


# ----------------------------------------------------------------------------- vision nets

class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        y = F.relu(self.bn1(self.conv1(x)), inplace=True)
        return F.relu(self.bn2(self.conv2(y)) + identity)


class Bottleneck(nn.Module):
    def __init__(self, cin, width, cout):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, 2, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, 2, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return F.relu(self.body(x) + self.downsample(x))


class TinyResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        self.layer1 = BasicBlock(8, 8, 1)
        self.layer2 = BasicBlock(8, 12, 2)
        self.layer3 = Bottleneck(12, 4, 16)
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        x = self.layer3(self.layer2(self.layer1(self.stem(x))))
        return self.fc(torch.flatten(self.pool(x), 1))


def test_resnet(strict_native):
    torch.manual_seed(0)
    x, y = randn(2, 3, 16, 16), torch.tensor([1, 3])
    check_model(TinyResNet(), (x, y), forward=lambda m, x, y: m(x),
                loss_fn=lambda out, args: F.cross_entropy(out, args[1]), optimizer="sgd")


class InvertedResidual(nn.Module):
    def __init__(self, c, expand):
        super().__init__()
        hidden = c * expand
        self.block = nn.Sequential(
            nn.Conv2d(c, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, hidden, 3, 1, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden),
            nn.ReLU6(inplace=True), nn.Conv2d(hidden, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        return x + self.block(x)


def test_mobilenet_v2_block(strict_native):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), InvertedResidual(8, 3), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(8, 4))
    check_model(model, (randn(2, 3, 12, 12),))


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.full((dim,), 0.5))

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)  # channels-last LayerNorm
        y = self.pwconv2(F.gelu(self.pwconv1(self.norm(y))))
        return x + (self.gamma * y).permute(0, 3, 1, 2)


def test_convnext_block(strict_native):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 2, 2), ConvNeXtBlock(8), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(8, 3))
    check_model(model, (randn(2, 3, 10, 10),))


class MiniUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(2, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.ReLU())
        self.enc2 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1),
                                  nn.InstanceNorm2d(16, affine=True), nn.ReLU())
        self.bottom = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())
        self.up1 = nn.ConvTranspose2d(16, 16, 2, stride=2)
        self.dec1 = nn.Sequential(nn.Conv2d(32, 8, 3, padding=1), nn.GroupNorm(4, 8), nn.ReLU())
        self.dec2 = nn.Conv2d(16, 3, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(e1)
        d1 = self.dec1(torch.cat([self.up1(self.bottom(e2)), e2], dim=1))
        up = F.interpolate(d1, scale_factor=2, mode="bilinear", align_corners=False)
        return self.dec2(torch.cat([up, e1], dim=1))


def test_mini_unet(strict_native):
    torch.manual_seed(0)
    check_model(MiniUNet(), (randn(2, 2, 8, 8),))


class TinyViT(nn.Module):
    def __init__(self, dim=16, patch=4, image=8, classes=3):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, 2, 32, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.size(0), -1, -1), x], dim=1) + self.pos
        return self.head(self.norm(self.encoder(x))[:, 0])


def test_vit(strict_native):
    torch.manual_seed(0)
    check_model(TinyViT(), (randn(2, 3, 8, 8),))


def test_audio_conv1d(strict_native):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv1d(1, 8, 9, stride=2, padding=4), nn.BatchNorm1d(8), nn.ReLU(),
                          nn.AvgPool1d(2), nn.Conv1d(8, 8, 5, padding=2, dilation=1), nn.BatchNorm1d(8),
                          nn.ReLU(), nn.AvgPool1d(2, stride=2, ceil_mode=True), nn.AdaptiveAvgPool1d(1),
                          nn.Flatten(), nn.Linear(8, 4))
    check_model(model, (randn(2, 1, 40),))


def test_pixel_shuffle(strict_native):
    torch.manual_seed(0)
    model = nn.Sequential(nn.PixelUnshuffle(2), nn.Conv2d(12, 16, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(16, 12, 3, padding=1), nn.PixelShuffle(2))
    check_model(model, (randn(2, 3, 8, 8),))


def test_weight_and_spectral_norm(strict_native):
    torch.manual_seed(0)
    model = nn.Sequential(parametrizations.weight_norm(nn.Linear(6, 8)), nn.Tanh(),
                          parametrizations.spectral_norm(nn.Linear(8, 8)), nn.ReLU(),
                          parametrizations.weight_norm(nn.Conv1d(8, 4, 1), dim=0), nn.Flatten())
    x = randn(3, 6)
    check_model(model, (x,), forward=lambda m, x: m[5](m[4](m[3](m[2](m[1](m[0](x)))).unsqueeze(-1))))


class Recommender(nn.Module):
    def __init__(self):
        super().__init__()
        self.users = nn.Embedding(10, 8)
        self.items = nn.EmbeddingBag(20, 8, mode="mean")
        self.tags = nn.EmbeddingBag(15, 8, mode="sum")
        self.mlp = nn.Sequential(nn.Linear(24, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, user, items, item_offsets, tags, tag_offsets, tag_weights):
        z = torch.cat([self.users(user), self.items(items, item_offsets),
                       self.tags(tags, tag_offsets, per_sample_weights=tag_weights)], dim=1)
        return self.mlp(z).squeeze(1)


def test_embedding_bag_recommender(strict_native):
    torch.manual_seed(0)
    inputs = (torch.tensor([1, 4, 7]), torch.tensor([0, 3, 5, 19, 3, 2]), torch.tensor([0, 2, 3]),
              torch.tensor([1, 14, 2, 2]), torch.tensor([0, 1, 1]), torch.rand(4))
    target = torch.tensor([1.0, 0.0, 1.0])
    check_model(Recommender(), inputs,
                loss_fn=lambda out, args: F.binary_cross_entropy_with_logits(out, target.to(out.device)))


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(12, 16), nn.ReLU())
        self.mu = nn.Linear(16, 4)
        self.logvar = nn.Linear(16, 4)
        self.dec = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 12))

    def forward(self, x, eps):
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + eps * torch.exp(0.5 * logvar)
        return self.dec(z), mu, logvar


def vae_loss(out, args):
    recon, mu, logvar = out
    x = args[0]
    rec = F.binary_cross_entropy_with_logits(recon, x, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return (rec + kld) / x.size(0)


def test_vae(strict_native):
    torch.manual_seed(0)
    x = torch.rand(4, 12, generator=torch.Generator().manual_seed(1))
    eps = randn(4, 4, seed=2)
    check_model(VAE(), (x, eps), loss_fn=vae_loss)


# ----------------------------------------------------------------------------- the ops themselves
# The models above reach these ops in float32; here each is also checked in every dtype it
# claims, on its edge cases, and on bad input (same exception type as the CPU).

import helpers  # noqa: E402

FLOAT_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_fused_rnn_cells_dtypes(kind, dtype, strict_native):
    """_thnn_fused_lstm_cell / _thnn_fused_gru_cell (+ backward) have no CPU kernel: the CPU's
    LSTMCell / GRUCell take the unfused path, which is the reference."""
    torch.manual_seed(0)
    cell = (nn.LSTMCell if kind == "lstm" else nn.GRUCell)(4, 5).to(dtype)
    x, h = randn(3, 4).to(dtype), randn(3, 5, seed=2).to(dtype)
    state = (h, randn(3, 5, seed=3).to(dtype)) if kind == "lstm" else h
    tol = helpers.TOLERANCE.get(dtype, dict(atol=1e-7, rtol=1e-7))
    if dtype in (torch.float16, torch.bfloat16):  # the CPU rounds every intermediate to 16 bits
        tol = dict(atol=4 * tol["atol"], rtol=4 * tol["rtol"])
    results = []
    for dev in ("cpu", VK):
        m = copy.deepcopy(cell).to(dev)
        args = to_device((x.clone(), state), dev)
        args[0].requires_grad_(True)
        out = m(*args)
        outs = out if isinstance(out, tuple) else (out,)
        sum(default_loss(o.float(), None) for o in outs).backward()
        results.append([t.detach().cpu() for t in (*outs, args[0].grad, *(p.grad for p in m.parameters()))])
    for a, e in zip(results[1], results[0]):
        assert_close(a, e, **tol)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_fused_rnn_cells_no_bias_and_errors(kind, strict_native):
    torch.manual_seed(0)
    cell = (nn.LSTMCell if kind == "lstm" else nn.GRUCell)(4, 5, bias=False)
    check_model(CellLoopOf(cell, kind), (randn(3, 2, 4),), steps=1)
    gates = 4 if kind == "lstm" else 3
    op = torch.ops.aten._thnn_fused_lstm_cell if kind == "lstm" else torch.ops.aten._thnn_fused_gru_cell
    ig, hg, hx = randn(2, gates * 5).to(VK), randn(2, gates * 5).to(VK), randn(2, 4).to(VK)
    with pytest.raises(RuntimeError):  # hidden size 4 does not match gates of 5
        op(ig, hg, hx)
    with pytest.raises(RuntimeError):  # only one of the biases
        op(ig, hg, randn(2, 5).to(VK), randn(gates * 5).to(VK))


class CellLoopOf(nn.Module):
    def __init__(self, cell, kind):
        super().__init__()
        self.cell, self.kind = cell, kind

    def forward(self, x):
        h = torch.zeros(x.size(1), self.cell.hidden_size, device=x.device)
        state = (h, h) if self.kind == "lstm" else h
        outs = []
        for t in range(x.size(0)):
            state = self.cell(x[t], state)
            outs.append(state[0] if self.kind == "lstm" else state)
        return torch.stack(outs)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("mask_type", [0, 1, 2])
def test_masked_softmax(mask_type, dtype, strict_native):
    x = helpers.make((2, 3, 4, 4), dtype)
    g = torch.Generator().manual_seed(3)
    mask = {0: torch.rand(4, 4, generator=g) > 0.6, 1: torch.rand(2, 4, generator=g) > 0.6,
            2: torch.rand(2, 3, 4, 4, generator=g) > 0.6}[mask_type]
    mask[0] = True  # fully masked rows (NaN on the CPU)
    helpers.check(lambda x, m: torch._masked_softmax(x, m, 3, mask_type), x, mask)
    helpers.check(lambda x, m: torch._masked_softmax(x, m, 3, mask_type), x, mask.float())  # not bool
    helpers.check(lambda x, m: torch._masked_softmax(x, m, 3, mask_type), x, mask[..., :3])  # bad shape


def test_masked_softmax_backward(strict_native):
    x = helpers.make((2, 3, 5), torch.float32)
    mask = torch.rand(2, 3, 5, generator=torch.Generator().manual_seed(2)) > 0.5
    grad = helpers.make((2, 3, 5), torch.float32, seed=4)
    y = torch.softmax(x.masked_fill(mask, float("-inf")), -1).nan_to_num(0.0)
    helpers.check(lambda g, y, m: torch._masked_softmax_backward(g, y, m, -1), grad, y, mask)
    xv = x.to(VK).requires_grad_(True)
    torch._masked_softmax(xv, mask.to(VK), -1, 2).backward(grad.to(VK))
    xc = x.clone().requires_grad_(True)
    torch._masked_softmax(xc, mask, -1, 2).backward(grad)
    assert_close(xv.grad.cpu(), xc.grad)


def test_native_multi_head_attention_bad_input(strict_native):
    d = 8
    q, w, b = randn(2, 3, d), randn(3 * d, d), randn(3 * d)
    pw, pb = randn(d, d), randn(d)
    fn = torch._native_multi_head_attention
    helpers.check(lambda q, k: fn(q, k, k, d, 2, w.to(q.device), b.to(q.device), pw.to(q.device), pb.to(q.device)),
                  q, randn(2, 4, d))  # key length differs: the CPU rejects it
    helpers.check(lambda q: fn(q, q, q, d, 3, w.to(q.device), b.to(q.device), pw.to(q.device), pb.to(q.device)), q)
    helpers.check(lambda q: fn(q, q, q, d, 2, w.to(q.device), b.to(q.device), pw.to(q.device), pb.to(q.device),
                               need_weights=True, average_attn_weights=False), q)
    helpers.check(lambda q: fn(q, q, q, d, 2, w.to(q.device), b.to(q.device), pw.to(q.device), pb.to(q.device))[0],
                  randn(0, 3, d))  # empty batch
    pad = torch.zeros(2, 3, dtype=torch.bool)
    pad[0] = True  # every key of sequence 0 masked: the CPU's masked softmax gives NaN rows
    for need_weights in (False, True):
        helpers.check(lambda q, m: fn(q, q, q, d, 2, w.to(q.device), b.to(q.device), pw.to(q.device),
                                      pb.to(q.device), m, need_weights, True, 1), q, pad)


def test_nested_tensor_from_mask(strict_native):
    x = randn(3, 5, 4)
    valid = ~key_padding_mask(3, 5, [5, 2, 0])
    assert torch._nested_tensor_from_mask_left_aligned(x.to(VK), valid.to(VK))
    helpers.check(lambda x, m: torch._nested_tensor_from_mask(x, m).to_padded_tensor(-1.0), x, valid)
    helpers.check(lambda x, m: torch._nested_tensor_from_mask(x, m).to_padded_tensor(0.5, (3, 6, 4)), x, valid)
    helpers.check(lambda x, m: torch._nested_tensor_from_mask(x, m).to_padded_tensor(0.5, (3, 4, 4)), x, valid)
    gap = valid.clone()
    gap[0, 2] = False
    assert not torch._nested_tensor_from_mask_left_aligned(x.to(VK), gap.to(VK))
    helpers.check(lambda x, m: torch._nested_tensor_from_mask(x, m), x, gap)  # RuntimeError on both
    helpers.check(lambda x, m: torch._nested_tensor_from_mask(x, m), x, valid.int())  # not bool


@pytest.mark.parametrize("use", ["h", "c"])
def test_lstm_cell_one_output_used(use, strict_native):
    """Only one of (hy, cy) reaches the loss: the fused backward gets the other gradient undefined."""
    torch.manual_seed(0)
    cell = nn.LSTMCell(4, 5)
    x, h, c = randn(3, 4), randn(3, 5, seed=2), randn(3, 5, seed=3)
    pick = 0 if use == "h" else 1
    check_model(cell, (x, (h, c)), forward=lambda m, x, state: m(x, state)[pick], steps=1)
