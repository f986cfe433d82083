"""Handler of smartnoise-synth's GANs (runs in ``.venvs/smartnoise-gan``, not in dpaudit).

Loaded by :mod:`dpaudit.systems._external_worker`; imports only the standard library, numpy,
pandas, torch, opacus 0.14 and smartnoise-synth 1.0.8. One operation, ``fit``: many runs of
DPCTGAN (``synth == "dpctgan"``), PATECTGAN (``"patectgan"``), DPGAN (``"dpgan"``) or
PATEGAN (``"pategan"``) on the datasets sent as integer arrays (``data0``, ``data1``, …),
each run recording

* ``synthetic`` (black-box): the synthetic table (``sample_rows`` rows);
* ``gradients`` (white-box, DPCTGAN and DPGAN, given the adversary's ``target`` row): per
  real-row step of the discriminator (opacus's step on the real rows, every second step),
  the released noisy clipped gradient sum, ``batch_size × p.grad`` = Σ clip(g_i) + N(0,
  σ²C²), of the first layer's weight restricted to the input columns of the target's one-hot
  data coordinates (``noisy``, steps × hidden × columns), and the adversary's guess of the
  target's clipped contribution there (``direction``): the target's per-sample gradient at
  the parameters of that step (the released model before it), dropout off, clipped as
  opacus clips (flat, at C), averaged over the conditional vectors the target is sampled
  with (DPGAN has none: at its one-hot row); with ``sigma`` = σ·C, the noise the
  accountant is given;
* ``votes`` (white-box, PATEGAN only): per student query (each generated row the student
  is trained on), its noisy label and the teachers' vote count on every dataset sent
  (``votes``, queries × datasets; the library's teachers on the run's own dataset, shadow
  teachers trained beside them with the same seeds on each other one: :func:`_record_votes`);
* ``student`` (white-box, PATECTGAN only, given the target row): per step that moves the
  student network, the first layer's gradient on the target's one-hot columns and its part
  the step's generated rows make (``_handler_patectgan.record_student``);
* ``conditions`` (white-box, DPCTGAN and PATECTGAN: DPGAN and PATEGAN have no conditional
  vectors): the conditional-vector category (its index) each row of the
  sampled table (``sample_rows``) was generated from — PATECTGAN's ``sample()`` copies each
  row's condition from a uniformly drawn *private* row (CTGAN's ``sample_original_condvec``),
  DPCTGAN's draws it by the *private* category frequencies (``sample_condvec``), neither
  with noise;
* ``training-conditions`` (white-box, DPCTGAN only): the conditional-vector category of
  every row its generator's steps were trained on (``sample_condvec``, by the *private*
  category frequencies, without noise; the library draws twice a batch, and the first draw,
  the discriminator's step's, also picks its real rows, so only the second is recorded);
* ``accounting``: what the library's own accountant spent — for DPCTGAN the ε opacus's RDP
  accountant reports before each epoch (``reported``: the library stops when one exceeds the
  target), the optimizer steps it counted and the ε after the last of them (``spent``); for
  PATECTGAN the student queries its moments accountant counted and the ε after the last
  (``spent``), with the last ε the library checked before training an iteration
  (``reported``); DPGAN's and PATEGAN's likewise (their own opacus engine and moments
  accountant, each read before an epoch or iteration and stopping at the first reading
  above ε).

The public domain is given as cardinalities: a ``LabelTransformer`` followed by a
``OneHotEncoder`` per column (the library's own ``gan`` style), fitted on the values
``0 … k − 1``, not on the private data.

``noise_scale`` ≠ 1 is the planted bug: it multiplies the noise drawn — DPCTGAN's and
DPGAN's Gaussian noise on the discriminator's clipped gradients (opacus's
``PrivacyEngine._generate_noise``), PATECTGAN's and PATEGAN's Laplace noise on the teachers'
votes (their ``pate``) — while the accountants are given the noise the library states.

The worker's option ``conditions`` (not the library's) is ``"data"`` (as installed) or
``"public"``, the fix: ``sample()`` draws each row's condition from the public domain (a
column uniformly, then one of its categories uniformly) instead of from the private data;
DPGAN and PATEGAN refuse it (and the ``conditions`` view). Its option ``training_conditions``
(DPCTGAN only) is the same fix in training: every training draw from the public domain (the
real rows are then drawn to match those conditions, as the library matches its own).

Its option ``networks`` (PATECTGAN only) is ``"shared"`` (as installed: the student and
every teacher one network) or ``"separate"``, the fix: a network of its own for the student
and for each teacher (``_handler_patectgan.separate_networks``).

Seeding: ``seed`` seeds numpy's and Python's global generators (batch and conditional-vector
sampling, PATECTGAN's and PATEGAN's Laplace noise) and torch's (the generator's initial
weights; DPGAN's and PATEGAN's discriminators, the library's ``_discriminator.py``, which does
not reseed, their shuffled data loaders and latent noise); the library then reseeds torch with
0 when it builds CTGAN's discriminator (``torch.manual_seed(0)`` in ``Discriminator.__init__``,
DPCTGAN and PATECTGAN), and DPCTGAN's and DPGAN's opacus 0.14 ``PrivacyEngine``, not in
secure mode, reseeds torch's global generator from ``os.urandom`` when it is built (its
``_set_seed``), so every later torch draw — the latent noise, dropout, the DP-SGD noise —
would differ from run to run whatever the seed. The worker reseeds it there with the run's
``seed`` instead (``_set_seed(seed)``, the engine's own way to fix its seed outside secure
mode): a run is reproducible from its seed, and runs with different seeds draw independent
noise as before.
"""

from __future__ import annotations

import math
import random
import time

import numpy as np

DISTRIBUTION = "smartnoise-synth"
_SYNTHS = ("dpctgan", "patectgan", "dpgan", "pategan")
#: The GANs with CTGAN's conditional vectors (the ``conditions`` option and view).
_CONDITIONAL = ("dpctgan", "patectgan")


def _transformer(cards):
    from snsynth.transform import (
        ChainTransformer,
        LabelTransformer,
        OneHotEncoder,
        TableTransformer,
    )

    tt = TableTransformer([ChainTransformer([LabelTransformer(nullable=False), OneHotEncoder()])
                           for _ in cards])  # fmt: skip
    tt.fit([tuple(min(i, k - 1) for k in cards) for i in range(max(cards))])
    return tt


def _target_inputs(tt, target):
    """The discriminator's input coordinates the target's one-hot row sets (its data part)
    and, per column, the coordinate of its conditional vector (after the data part)."""
    row = np.asarray(tt.transform([tuple(int(v) for v in target)])[0], dtype=np.float64)
    cols = np.flatnonzero(row == 1.0)
    return cols, cols + len(row)


def _eval_gradients(seq, x):
    """Per-sample gradients of −log D(x) (the real step's loss) for the rows of ``x``, dropout
    off, through ``torch.func`` on detached copies of the parameters (opacus's hooks on the
    layers never fire, so its per-sample state is untouched): one tensor per parameter,
    batch first."""
    import torch
    from torch.func import grad, vmap

    layers = list(seq)
    for layer in layers:
        if type(layer).__name__ not in ("Linear", "LeakyReLU", "Dropout", "Sigmoid"):
            raise ValueError(f"the gradient record does not know layer {type(layer).__name__}")

    def loss(params, row):
        h, it = row[None, :], iter(params)
        for layer in layers:
            name = type(layer).__name__
            if name == "Linear":
                h = torch.nn.functional.linear(h, next(it), next(it))
            elif name == "LeakyReLU":
                h = torch.nn.functional.leaky_relu(h, layer.negative_slope)
            elif name == "Sigmoid":
                h = torch.sigmoid(h)
        return -torch.log(h.clamp_min(1e-12)).sum()

    params = tuple(p.detach().clone() for p in seq.parameters())
    return list(vmap(grad(loss), in_dims=(None, 0))(params, x))


def _clipped_first_layer(seq, x, cols, clip):
    """Mean over the input rows ``x`` of their per-sample gradients clipped as opacus clips
    (flat, min(1, C/‖g‖) g), on the first layer's weight columns ``cols``; dropout off."""
    import torch

    x = torch.as_tensor(x, dtype=seq[0].weight.dtype)
    grads = _eval_gradients(seq, x)
    norm = torch.sqrt(sum(g.reshape(len(x), -1).pow(2).sum(1) for g in grads))
    factor = (clip / (norm + 1e-6)).clamp(max=1.0)
    w = grads[0][:, :, torch.as_tensor(cols)] * factor[:, None, None]
    return w.mean(0)


def _direction(seq, data_cols, cond_cols, clip):
    """The adversary's guess of the target's clipped contribution to the first layer's weight
    on ``data_cols``: mean over its conditional vectors of min(1, C/‖g‖) g (opacus's flat
    clipping), dropout off."""
    import torch

    width = seq[0].weight.shape[1]
    x = torch.zeros(len(cond_cols), width)
    x[:, torch.as_tensor(data_cols)] = 1.0
    x[torch.arange(len(cond_cols)), torch.as_tensor(cond_cols)] = 1.0
    return _clipped_first_layer(seq, x, data_cols, clip)


def _patch_dpctgan(noise_scale, engines, record=None, seed=None, public_rows=None):
    """Record each opacus ``PrivacyEngine`` DPCTGAN builds; scale the noise it draws; seed it
    with ``seed`` (module docstring, "Seeding"); with ``record`` (a dict with ``data_cols``,
    ``cond_cols``), append to its ``noisy`` and ``direction`` lists on every real-row step.
    With ``public_rows`` (the control of its sampling rate), the engine is given that row
    count instead of the private one, so it accounts the rate B/N and the epochs the library
    trains no longer read n (its batches an epoch, ⌊n/B⌋, still do: the loop reads them)."""
    import opacus

    orig = opacus.PrivacyEngine

    class Recorded(orig):
        def __init__(self, *a, **k):
            if public_rows:
                k["sample_size"] = int(public_rows)
            super().__init__(*a, **k)
            engines.append(self)
            if seed is not None and not self.secure_rng:
                self.random_number_generator = self._set_seed(int(seed))

        def _generate_noise(self, *a, **k):
            return super()._generate_noise(*a, **k) * noise_scale

        def step(self, is_empty=False):
            super().step(is_empty)
            if record is None or self.steps % 2 == 1:  # step 1, 3, …: the generated rows
                return
            seq = getattr(self.module, "_module", self.module).seq
            cols = record["data_cols"]
            noisy = seq[0].weight.grad.detach()[:, cols] * self.batch_size
            record["noisy"].append(noisy.numpy().astype(np.float64))
            d = _direction(seq, cols, record["cond_cols"], float(self.max_grad_norm))
            record["direction"].append(d.numpy().astype(np.float64))
            record["sigma"] = float(self.noise_multiplier * self.max_grad_norm)
            record["batch_size"] = int(self.batch_size)

    opacus.PrivacyEngine = Recorded
    return lambda: setattr(opacus, "PrivacyEngine", orig)


def _shadow_step(teacher, loader, shadows, calls):
    """One teacher step of PATEGAN replayed on each shadow teacher: the real rows its loader
    draws from the global generator's state at the teacher loader's draw (so with the same
    seeds as the teacher's, whatever the partition's size: torch's ``RandomSampler`` draws one
    seed from it, then permutes with its own generator), the step's generated rows, the
    library's loss (``BCELoss``, real rows labelled 1, generated 0) and an Adam of its own."""
    import torch

    mine = [x for m, x in calls if m is teacher]
    if len(mine) != 2:
        raise RuntimeError(f"a teacher step made {len(mine)} forward calls, not 2")
    fake, criterion, now = mine[1], torch.nn.BCELoss(), torch.get_rng_state()
    for _, net, opt, shadow_loader in shadows:
        torch.set_rng_state(loader.state)
        real = next(iter(shadow_loader))[0]
        opt.zero_grad()
        for x, label in ((real, 1), (fake, 0)):
            target = torch.full((x.shape[0],), label, dtype=torch.float).double()
            criterion(net(x).squeeze(), target).backward()
        opt.step()
    torch.set_rng_state(now)


def _record_votes(mod, votes):
    """PATEGAN's teachers on the other datasets (``votes["others"]``: dataset index → its
    rows as the library's transformer gives them), trained beside the library's in lockstep:
    each shadow teacher starts from its teacher's initial weights, and on each of its
    teacher's steps takes the same step on its own partition (:func:`_shadow_step`). PATE's
    analysis lets a teacher be any function of its partition and of randomness the adversary
    may be given (Papernot et al. 2017, arXiv:1610.05755), so the shadows are what the
    adversary computes: the teachers the other dataset would have given along the transcript
    it sees. Returns what to restore and the ``optim`` shim; ``votes["nets"]`` maps a teacher
    to its shadows."""
    import copy

    import torch
    from torch.utils.data import DataLoader, TensorDataset

    discs, loaders, made, calls = [], [], [], []
    init, library_loader = mod.Discriminator.__init__, mod.DataLoader

    def recorded_init(self, *a, **k):
        init(self, *a, **k)
        discs.append(self)
        self.register_forward_hook(lambda m, i, o: calls.append((m, i[0].detach())))

    class Loader(library_loader):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            loaders.append(self)

        def __iter__(self):
            self.state = torch.get_rng_state()
            return super().__iter__()

    def shadows_of(i, lr):
        teachers = len(loaders)
        out = []
        for j, rows in votes["others"].items():
            if int(len(rows) / 1000) != teachers:
                raise ValueError(f"dataset {j} of {len(rows)} rows gives PATEGAN "
                                 f"{int(len(rows) / 1000)} teachers, not {teachers}")  # fmt: skip
            part = np.array_split(rows, teachers)[i]
            net = copy.deepcopy(discs[1 + i])
            net._forward_hooks.clear()
            loader = DataLoader(TensorDataset(torch.from_numpy(part.astype("double"))),
                                batch_size=loaders[i].batch_size, shuffle=True)  # fmt: skip
            out.append((j, net, torch.optim.Adam(net.parameters(), lr=lr), loader))
        return out

    class Adam(torch.optim.Adam):
        def __init__(self, params, *a, **k):
            super().__init__(params, *a, **k)
            made.append(self)
            if len(made) > 2:  # teacher len(made) − 3, built after its weights are set
                i = len(made) - 3
                votes["nets"][i] = shadows_of(i, self.defaults["lr"])

        def zero_grad(self, set_to_none=True):
            calls.clear()
            super().zero_grad(set_to_none)

        def step(self, closure=None):
            i = made.index(self) - 2
            if i >= 0:
                _shadow_step(discs[1 + i], loaders[i], votes["nets"][i], calls)
            return super().step(closure)

    mod.Discriminator.__init__ = recorded_init
    mod.DataLoader = Loader
    shim = type("optim", (), {"Adam": Adam})
    saved = [(mod.Discriminator, "__init__", init), (mod, "DataLoader", library_loader),
             (mod, "optim", mod.optim)]  # fmt: skip
    return saved, shim


def _record_query(votes, data, teacher_votes, labels, lap_scale):
    """One student batch's record: per row, the teachers' vote count on each dataset (the
    library's teachers on the run's own, the shadows on the others; each teacher votes
    ``output > 0.5`` as the library's ``pate`` does) and the noisy label it released."""
    import torch

    cols = {votes["own"]: teacher_votes.squeeze(1).numpy()}
    with torch.no_grad():
        for j in votes["others"]:
            cols[j] = sum((net(data) > 0.5).double().squeeze(1).numpy()
                          for shadows in votes["nets"].values()
                          for k, net, _, _ in shadows if k == j)  # fmt: skip
    votes["votes"].append(np.stack([cols[j] for j in sorted(cols)], axis=1).astype(np.int64))
    votes["labels"].append(labels.squeeze(1).numpy().astype(np.int64))
    votes["scale"] = 1.0 / float(lap_scale)
    votes["teachers"] = len(votes["nets"])


def _patch_patectgan(noise_scale, queries, record=None, module="patectgan", votes=None,
                     separate=False):  # fmt: skip
    """Record PATECTGAN's (``module="pategan"``: PATEGAN's) moments-accountant updates; scale
    the Laplace noise of its votes; with ``record`` (a dict with ``data_cols``; PATECTGAN
    only), record the gradients of the steps that move its student
    (``_handler_patectgan.record_student``); with ``votes`` (PATEGAN only), each student
    query's votes on every dataset and its noisy label (:func:`_record_votes`); with
    ``separate`` (PATECTGAN only), its student and teachers networks of their own
    (``_handler_patectgan.separate_networks``). Both modules import ``pate`` and
    ``moments_acc`` by name from ``privacy_utils``: the module's names are patched."""
    import importlib

    from _handler_patectgan import record_student, separate_networks

    mod = importlib.import_module(f"snsynth.pytorch.nn.{module}")

    saved = [(mod, "pate", mod.pate), (mod, "moments_acc", mod.moments_acc)]
    if separate:
        saved += separate_networks(mod)
    if record is not None or votes is not None:
        more, shim = record_student(mod, record) if votes is None else _record_votes(mod, votes)
        saved += more
        mod.optim = shim

    def pate(data, teachers, lap_scale, device="cpu", _f=mod.pate):
        labels, counts = _f(data, teachers, lap_scale / noise_scale, device=device)  # 1/scale
        if votes is not None:
            _record_query(votes, data, counts, labels, lap_scale)
        return labels, counts

    def moments_acc(num_teachers, votes, lap_scale, l_list, device="cpu", _f=mod.moments_acc):
        a = _f(num_teachers, votes, lap_scale, l_list, device=device)
        queries.append((int(votes.shape[0]), a.numpy().copy(), l_list.numpy().copy()))
        return a

    if noise_scale != 1.0 or votes is not None:
        mod.pate = pate
    mod.moments_acc = moments_acc

    def undo():
        for obj, name, value in reversed(saved):
            setattr(obj, name, value)

    return undo


def _public_batches(public_rows):
    """A stand-in for DPGAN's ``DataLoader`` (the fix of its step count, a control): ⌊N/B⌋
    batches an epoch, ``N`` = ``public_rows``, each of ``B`` rows drawn without replacement
    from the private rows by torch's global generator, however many there are."""
    import torch

    class PublicBatches:
        def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False):
            self.rows, self.batch_size = dataset.tensors[0], int(batch_size)
            if len(self.rows) < self.batch_size:  # DPGAN labels a batch by its nominal size
                raise ValueError(f"public_rows draws batches of {self.batch_size} rows from "
                                 f"{len(self.rows)}: give batch_size ≤ the rows")  # fmt: skip

        def __len__(self):
            return public_rows // self.batch_size

        def __iter__(self):
            for _ in range(len(self)):
                yield [self.rows[torch.randperm(len(self.rows))[: self.batch_size]]]

    return PublicBatches


def _patch_dpgan(noise_scale, engines, reported, seed, record=None, public_rows=None):
    """DPGAN's opacus engine as DPCTGAN's (:func:`_patch_dpctgan`: recorded in ``engines``,
    its noise scaled, seeded with ``seed``), under the name ``dpgan.py`` looks it up (``from
    opacus import PrivacyEngine`` binds it at import); each ε the library reads before an
    epoch (``get_privacy_spent``) appended to ``reported``; with ``record`` (as DPCTGAN's),
    each real-row step's noisy clipped sum on the target's columns and the target's clipped
    gradient there. DPGAN calls no ``zero_grad`` between its generated-row and real-row
    steps, but opacus 0.14 deletes the per-sample gradients once it has clipped them and
    sets ``p.grad`` to the clipped sum it forms (``pre_step``), so the real-row step releases
    its 64 rows' clipped sum and noise only, as DPCTGAN's does. The library sets
    ``max_grad_norm`` to a list after its first batch, which opacus reads on empty batches
    only: the clip is the flat clipper's, built at ``attach``. With ``public_rows`` (the
    control of the step count), the engine accounts the sampling rate B/N and the batches
    are :func:`_public_batches`'s: the step count no longer reads the private row count."""
    import opacus
    import snsynth.pytorch.nn.dpgan as mod

    undo = _patch_dpctgan(noise_scale, engines, None, seed, public_rows)

    class Read(opacus.PrivacyEngine):
        def get_privacy_spent(self, target_delta=None):
            out = super().get_privacy_spent(target_delta)
            reported.append(float(out[0]))
            return out

        def step(self, is_empty=False):
            super().step(is_empty)
            if record is None or self.steps % 2 == 1:  # steps 1, 3, …: the generated rows
                return
            model = getattr(self.module, "_module", self.module).model
            cols, clip = record["data_cols"], float(self.clipper.norm_clipper.flat_value)
            noisy = model[0].weight.grad.detach()[:, cols] * self.batch_size
            record["noisy"].append(noisy.numpy().astype(np.float64))
            d = _clipped_first_layer(model, record["row"][None, :], cols, clip)
            record["direction"].append(d.numpy().astype(np.float64))
            record["sigma"] = float(self.noise_multiplier * clip)
            record["batch_size"] = int(self.batch_size)

    orig, loader = mod.PrivacyEngine, mod.DataLoader
    mod.PrivacyEngine = Read
    if public_rows:
        mod.DataLoader = _public_batches(int(public_rows))

    def restore():
        mod.PrivacyEngine, mod.DataLoader = orig, loader
        undo()

    return restore


def _public_condvec(sampler, batch, synth):
    """A conditional vector per row drawn from the public domain (the fix): a column
    uniformly, then one of its categories uniformly, from the run's seeded global generator
    (the one the library's own draw comes from), in the shape the library's draw returns."""
    col = np.random.randint(0, sampler._n_discrete_columns, size=batch)  # noqa: NPY002
    u = np.random.rand(batch)  # noqa: NPY002
    opt = np.floor(u * sampler._discrete_column_n_category[col]).astype(np.int64)
    cond = np.zeros((batch, sampler._n_categories), dtype="float32")
    cond[np.arange(batch), sampler._discrete_column_cond_st[col] + opt] = 1
    if synth == "patectgan":
        return cond
    mask = np.zeros((batch, sampler._n_discrete_columns), dtype="float32")
    mask[np.arange(batch), col] = 1
    return cond, mask, col, opt


def _patch_conditions(synth, conditions, record):
    """The conditional vectors — PATECTGAN's ``sample_original_condvec`` (the category of a
    uniformly drawn private row), DPCTGAN's ``sample_condvec`` (a category drawn by its private
    frequency, an absent one counted once) — drawn from the public domain instead
    (``conditions == "public"``, the fix: :func:`_public_condvec`); with ``record`` (a list),
    each batch's category per row (its index in the conditional vector) appended to it.
    Patched around ``sample()`` and, for DPCTGAN's training draws (the same method), around
    ``fit()``."""
    from snsynth.pytorch.nn.ctgan.data_sampler import DataSampler

    name = "sample_original_condvec" if synth == "patectgan" else "sample_condvec"
    orig = getattr(DataSampler, name)

    def patched(self, batch):
        out = _public_condvec(self, batch, synth) if conditions == "public" else orig(self, batch)
        cond = out if synth == "patectgan" or out is None else out[0]
        if record is not None and cond is not None:
            record.append(cond.argmax(axis=1).astype(np.int64))
        return out

    setattr(DataSampler, name, patched)
    return lambda: setattr(DataSampler, name, orig)


def _dpctgan_accounting(s, engines, delta):
    engine = engines[-1]
    spent, _ = engine.get_privacy_spent(delta)
    return {"reported": [float(e) for e in s.epsilon_list], "steps": int(engine.steps),
            "epochs": len(s.loss_d_list), "spent": float(spent)}  # fmt: skip


def _dpgan_accounting(s, engines, reported, delta):
    """DPGAN's ε readings before each epoch (``reported``: it stops at the first above ε, or
    after ``epochs``), the epochs it trained, opacus's step count and the ε after the last
    step (``spent``)."""
    reads = list(reported)
    engine = engines[-1]
    epochs = len(reads) - 1 if reads and reads[-1] > s.epsilon else len(reads)
    spent, _ = engine.get_privacy_spent(delta)
    return {"reported": reads, "steps": int(engine.steps), "epochs": epochs,
            "spent": float(spent)}  # fmt: skip


def _patectgan_accounting(s, queries, delta):
    """The library's ε after its last moments-accountant update (``spent``) and the one it
    checked before training its last iteration (``reported``: at most ε; the next check, the
    one that stops it, is ``spent``)."""
    if not queries:
        return {"reported": [], "queries": 0, "student_steps": 0, "spent": 0.0}
    orders = queries[0][2]
    alphas = np.cumsum([a for _, a, _ in queries], axis=0)
    k = int(s.student_iters)
    last = len(queries) - k
    before = alphas[last - 1] if last > 0 else np.zeros_like(orders, dtype=np.float64)
    return {"reported": [float(np.min((before - math.log(delta)) / orders))],
            "queries": int(sum(n for n, _, _ in queries)), "student_steps": len(queries),
            "spent": float(np.min((alphas[-1] - math.log(delta)) / orders))}  # fmt: skip


def _check_body(body):
    """The request's generator, views and options, checked: ``(synth, observe, options,
    worker)`` (``worker``: the worker's own options, ``conditions``, ``training_conditions``,
    ``networks`` and ``public_rows``,
    taken out of the library's)."""
    synth = body["synth"]
    if synth not in _SYNTHS:
        raise ValueError(f"the GAN worker runs {' or '.join(_SYNTHS)}, got synth={synth!r}")
    observe = set(body.get("observe", ["synthetic"]))
    known = {"synthetic", "accounting", "gradients", "student", "conditions", "votes",
             "training-conditions"}  # fmt: skip
    if observe - known:
        raise ValueError(f"the GAN worker records the synthetic table, the accounting, the "
                         f"sample's and DPCTGAN's training conditions, DPCTGAN's and DPGAN's "
                         f"gradients, PATECTGAN's "
                         f"student and PATEGAN's votes only, not "
                         f"{sorted(observe - known)}")  # fmt: skip
    for view, gans in (("gradients", ("dpctgan", "dpgan")), ("student", ("patectgan",))):
        if view in observe and (synth not in gans or body.get("target") is None):
            raise ValueError(f"{view} is recorded for {' and '.join(g.upper() for g in gans)} "
                             f"given the adversary's "
                             f"target row, got synth={synth!r}, "
                             f"target={body.get('target')!r}")  # fmt: skip
    if "votes" in observe and synth != "pategan":
        raise ValueError(f"votes are recorded for PATEGAN only, got synth={synth!r}")
    if "conditions" in observe and not int(body.get("sample_rows", 0)):
        raise ValueError(f"the sample's conditions are recorded for a sample() of sample_rows "
                         f"> 0 rows, got sample_rows={body.get('sample_rows')!r}")  # fmt: skip
    options = dict(body.get("options", {}))
    if synth not in _CONDITIONAL and ("conditions" in options or "conditions" in observe):
        raise ValueError(f"{synth.upper()} has no conditional vectors: the conditions option "
                         f"and view apply to {' and '.join(_CONDITIONAL)} only")  # fmt: skip
    if synth != "dpctgan" and ("training_conditions" in options
                               or "training-conditions" in observe):  # fmt: skip
        raise ValueError(f"the training conditions option and view apply to DPCTGAN only, got "
                         f"synth={synth!r}")  # fmt: skip
    conditions = options.pop("conditions", "data")
    training = options.pop("training_conditions", "data")
    for name, v in (("conditions", conditions), ("training_conditions", training)):
        if v not in ("data", "public"):
            raise ValueError(f"{name} must be 'data' or 'public', got {v!r}")
    networks = options.pop("networks", "shared")
    if networks not in ("shared", "separate") or (networks != "shared" and synth != "patectgan"):
        raise ValueError(f"networks ('shared' as installed, 'separate' the fix) applies to "
                         f"PATECTGAN only, got synth={synth!r}, networks={networks!r}")  # fmt: skip
    public_rows = options.pop("public_rows", None)
    if public_rows is not None and (synth not in ("dpgan", "dpctgan") or int(public_rows) < 1):
        raise ValueError(f"public_rows (a row count ≥ 1) applies to DPGAN and DPCTGAN only, got "
                         f"synth={synth!r}, public_rows={public_rows!r}")  # fmt: skip
    for k in ("generator_dim", "discriminator_dim"):
        if k in options:
            options[k] = tuple(int(v) for v in options[k])
    return synth, observe, options, {"conditions": conditions, "public_rows": public_rows,
                                     "training_conditions": training,
                                     "networks": networks}  # fmt: skip


def _patch(synth, noise_scale, seed, record, votes=None, worker=None):
    """The generator's patches for one run: ``(undo, accounting)``, ``accounting(s, delta)``
    reading what they recorded once the fit is done."""
    engines, queries, reported = [], [], []
    worker = worker or {}
    public_rows = worker.get("public_rows")
    if synth == "dpctgan":
        undo = _patch_dpctgan(noise_scale, engines, record, seed, public_rows)
        return undo, lambda s, delta: _dpctgan_accounting(s, engines, delta)
    if synth == "dpgan":
        undo = _patch_dpgan(noise_scale, engines, reported, seed, record, public_rows)
        return undo, lambda s, delta: _dpgan_accounting(s, engines, reported, delta)
    undo = (_patch_patectgan(noise_scale, queries, record,
                             separate=worker.get("networks") == "separate")
            if synth == "patectgan"
            else _patch_patectgan(noise_scale, queries, module="pategan", votes=votes))  # fmt: skip
    return undo, lambda s, delta: _patectgan_accounting(s, queries, delta)


def _white_box_views(synth, record, result, syn, i, votes=None):
    """Move a run's white-box record into its result (the small fields) and the arrays."""
    if votes is not None:
        result["votes"] = {"teachers": votes["teachers"], "scale": votes["scale"],
                           "queries": int(sum(len(v) for v in votes["labels"]))}  # fmt: skip
        syn[f"votes{i}"] = np.concatenate(votes["votes"])
        syn[f"labels{i}"] = np.concatenate(votes["labels"])
    if record is None:
        return
    if synth == "patectgan":
        result["student"] = {"columns": record["data_cols"], "steps": len(record["norm2"]),
                             "teacher_steps": int(sum(record["teacher"]))}  # fmt: skip
        syn[f"norm2{i}"] = np.stack(record["norm2"])
        syn[f"residual2{i}"] = np.stack(record["residual2"])
    else:
        result["gradients"] = {"sigma": record["sigma"], "columns": record["data_cols"],
                               "batch_size": record["batch_size"],
                               "steps": len(record["noisy"])}  # fmt: skip
        syn[f"noisy{i}"] = np.stack(record["noisy"])
        syn[f"direction{i}"] = np.stack(record["direction"])


def _sample(s, synth, observe, conditions, rows, result, syn, i):
    """The synthetic table of ``rows`` rows, and the conditions it was generated from."""
    drawn = []
    undo = (_patch_conditions(synth, conditions, drawn) if synth in _CONDITIONAL
            else lambda: None)  # fmt: skip
    try:
        t = s.sample(rows)
    finally:
        undo()
    if "synthetic" in observe:
        syn[f"synthetic{i}"] = np.asarray(t, dtype=np.int64).reshape(len(t), -1)
    if "conditions" in observe:  # the rows kept: the first `rows` drawn
        rule = "rows" if synth == "patectgan" else "frequencies"  # the library's
        result["conditions"] = {"rows": rows, "rule": rule}
        syn[f"conditions{i}"] = np.concatenate(drawn)[:rows]


def _records(observe, body, tt, tables, mine):
    """A run's white-box records to fill: ``(record, votes)`` — the target's one-hot columns
    for ``gradients`` and ``student``; for ``votes``, every dataset but the run's own
    (``mine``), as the library's transformer gives it."""
    record = votes = None
    if "gradients" in observe or "student" in observe:
        data_cols, cond_cols = _target_inputs(tt, body["target"])
        row = tt.transform([tuple(int(v) for v in body["target"])])[0]
        record = {"data_cols": data_cols.tolist(), "cond_cols": cond_cols.tolist(),
                  "row": np.asarray(row, dtype=np.float32),
                  "noisy": [], "direction": [], "norm2": [], "residual2": [],
                  "teacher": []}  # fmt: skip
    if "votes" in observe:
        votes = {"own": mine, "nets": {}, "votes": [], "labels": [],
                 "others": {int(k[4:]): np.array(tt.transform(v))
                            for k, v in tables.items() if int(k[4:]) != mine}}  # fmt: skip
    return record, votes


def _fit(s, synth, observe, worker, table, tt):
    """Fit ``s`` on ``table``; DPCTGAN's training conditions drawn from the public domain
    (the ``training_conditions`` fix: every draw) and recorded (``training-conditions`` in
    ``observe``: the categories of the generator steps' draws, returned). The library draws
    twice a batch, the discriminator's step first (its draw also picks the real rows, which
    DP-SGD's sampling hides, so it is not returned), then the generator's."""
    drawn = [] if "training-conditions" in observe else None
    fix = worker["training_conditions"]
    undo = (_patch_conditions(synth, fix, drawn) if drawn is not None or fix == "public"
            else lambda: None)  # fmt: skip
    try:
        s.fit(table, transformer=tt)
    finally:
        undo()
    return None if drawn is None else drawn[1::2]


def op_fit(body, arrays):
    """Run the generator ``len(body["runs"])`` times; see the module docstring."""
    import pandas as pd
    import torch
    from snsynth import Synthesizer

    synth, observe, options, worker = _check_body(body)
    eps, delta = float(body["epsilon"]), float(body["delta"])
    cards = [int(c) for c in body["cardinalities"]]
    sample_rows = int(body.get("sample_rows", 0))
    noise_scale = float(body.get("noise_scale", 1.0))
    cols = [f"c{i}" for i in range(len(cards))]
    tables = {k: pd.DataFrame(v.astype(np.int64), columns=cols) for k, v in arrays.items()}
    own = {"verbose": False, "cuda": False} if synth in _CONDITIONAL else {}
    torch.set_num_threads(1)
    out, syn = [], {}
    for i, run in enumerate(body["runs"]):
        seed = int(run["seed"])
        np.random.seed(seed)  # noqa: NPY002 (the library draws from it)
        random.seed(seed)
        torch.manual_seed(seed)
        tt = _transformer(cards)
        record, votes = _records(observe, body, tt, tables, int(run["dataset"]))
        undo, accounting = _patch(synth, noise_scale, seed, record, votes, worker)
        t0 = time.process_time()
        try:
            s = Synthesizer.create(synth, epsilon=eps, delta=delta, **own, **options)
            drawn = _fit(s, synth, observe, worker, tables[f"data{int(run['dataset'])}"], tt)
            result = {"seconds": time.process_time() - t0, "accounting": accounting(s, delta)}
            if drawn is not None:
                result["training-conditions"] = {"draws": int(sum(len(d) for d in drawn)),
                                                 "rule": "frequencies"}  # fmt: skip
                syn[f"tconditions{i}"] = np.concatenate(drawn)
            _white_box_views(synth, record, result, syn, i, votes)
            if ("synthetic" in observe or "conditions" in observe) and sample_rows:
                _sample(s, synth, observe, worker["conditions"], sample_rows, result, syn, i)
            result["cpu_seconds"] = time.process_time() - t0
        finally:
            undo()
        out.append(result)
    return {"runs": out, "rho": float("nan")}, syn
