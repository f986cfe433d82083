"""PATECTGAN's student network, for the smartnoise-synth GAN handler (runs in
``.venvs/smartnoise-gan`` beside ``_handler_smartnoise_gan.py``, which imports it; imports only
the standard library and torch): the steps that move it, recorded for ``white-box-student``
(:func:`record_student`), and the fix of the shared network, a control
(:func:`separate_networks`).

In smartnoise-synth 1.0.8's PATECTGAN the student and every teacher are one network
(``student_disc = discriminator``, ``teacher_disc = [discriminator for i in …]``), so every
teacher step on a real batch is a step of the student, which PATE-GAN's analysis (Jordon,
Yoon & van der Schaar 2019) releases. The fix gives the student and each teacher a network
of its own, as PATE-GAN's algorithm has them.
"""

from __future__ import annotations


def record_student(mod, record):
    """Record, on every step that moves PATECTGAN's student network, the first layer's gradient
    on ``record["data_cols"]`` (``G_k``, what the step applies to the student) and the part of
    it that the step's generated rows make (``F_k = δᵀx`` of the step's first forward call
    whose error reached this step, on generated rows); per step and column the squared norms
    over the hidden units of ``G_k`` (``norm2``) and of ``G_k − F_k`` (``residual2``). As
    installed the student and teachers are one network, so its steps are every teacher step
    (generated rows, then a real batch: two calls) and the student's own (one call, generated
    rows only); with separate networks (the control) only the student's own. A forward call
    counts for a step when its error arrived after that network's last ``zero_grad`` (the
    student's forward precedes its ``zero_grad``). Returns what to restore."""
    import torch

    calls = {}  # network (id of its first layer's weight) → [input, (generation, δ) or None]
    generation = {}  # network → how many times its optimizers' zero_grad ran
    made = []  # optimizers in the order the library builds them: G, student, teachers
    init = mod.Discriminator.__init__

    def hook(layer, inputs, output):
        if output.requires_grad:
            key = id(layer.weight)
            entry = [inputs[0].detach(), None]
            calls.setdefault(key, []).append(entry)
            output.register_hook(
                lambda g, e=entry, k=key: e.__setitem__(1, (generation.get(k, 0), g.detach()))
            )

    def recorded_init(self, *a, **k):
        init(self, *a, **k)
        self.seq[0].register_forward_hook(hook)  # copies of the network (deepcopy) keep it

    class Adam(torch.optim.Adam):
        def __init__(self, params, *a, **k):
            params = list(params)
            super().__init__(params, *a, **k)
            self.first = params[0]
            made.append(self)

        def zero_grad(self, set_to_none=True):
            key = id(self.first)
            generation[key] = generation.get(key, 0) + 1
            calls[key] = [e for e in calls.get(key, []) if e[1] is None]  # drop stale calls
            super().zero_grad(set_to_none)

        def step(self, closure=None):
            if made.index(self) >= 1 and self.first is made[1].first:  # moves the student
                key = id(self.first)
                used = [(x, d[1]) for x, d in calls.get(key, [])
                        if d is not None and d[0] == generation.get(key, 0)]  # fmt: skip
                want = 1 if self is made[1] else 2
                if len(used) != want:
                    raise RuntimeError(f"a step of the student's network made {len(used)} "
                                       f"forward calls, not {want}")  # fmt: skip
                cols = record["data_cols"]
                g = self.first.grad.detach()
                x, d = used[0]
                f = d.t().matmul(x)  # the full matrix, as autograd forms it, then the columns
                record["norm2"].append((g[:, cols].double() ** 2).sum(0).numpy())
                record["residual2"].append(((g - f)[:, cols].double() ** 2).sum(0).numpy())
                record["teacher"].append(self is not made[1])
                calls[key] = []
            return super().step(closure)

    mod.Discriminator.__init__ = recorded_init
    shim = type("optim", (), {"Adam": Adam})
    return [(mod.Discriminator, "__init__", init), (mod, "optim", mod.optim)], shim


#: The two assignments of PATECTGAN's ``train`` that make its student and every teacher one
#: network, and the fix (the control of that violation): each a copy of its own, which the
#: library's next lines initialise (``weights_init``) one by one.
SHARED_NETWORK = (
    ("student_disc = discriminator\n",
     "student_disc = __import__('copy').deepcopy(discriminator)\n"),
    ("teacher_disc = [discriminator for i in range(self.num_teachers)]",
     "teacher_disc = [__import__('copy').deepcopy(discriminator) "
     "for i in range(self.num_teachers)]"),
)  # fmt: skip


def separate_networks(mod):
    """PATECTGAN's ``train`` with a student and teachers of their own: the installed method's
    source with the two assignments of :data:`SHARED_NETWORK` replaced (each must occur
    once), compiled against the library module's globals (so the other patches, of ``pate``,
    ``moments_acc`` and ``optim``, apply to it as to the original). Returns what to restore."""
    import inspect
    import textwrap

    cls = mod.PATECTGAN
    src = textwrap.dedent(inspect.getsource(cls.train))
    for old, new in SHARED_NETWORK:
        if src.count(old) != 1:
            raise RuntimeError(f"PATECTGAN.train no longer holds {old.strip()!r} once: "
                               f"the fix is written for smartnoise-synth 1.0.8")  # fmt: skip
        src = src.replace(old, new)
    made = {}
    exec(compile(src, inspect.getsourcefile(cls), "exec"), mod.__dict__, made)
    saved = [(cls, "train", cls.__dict__["train"])]
    cls.train = made["train"]
    return saved
