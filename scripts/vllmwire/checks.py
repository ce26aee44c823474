"""Checks for fake_frontend.py: a named set of pass/fail checks, and Shape,
what --structure-only expects of one request whatever the model."""

from __future__ import annotations

from structs import FinishReason


class Checks:
    def __init__(self):
        self.checks: dict[str, bool] = {}
        self.failures: list[str] = []

    def check(self, name, cond, detail=""):
        ok = bool(cond)
        self.checks[name] = self.checks.get(name, True) and ok
        if not ok:
            self.failures.append(f"{name}: {detail}" if detail else name)
        return ok



class Shape:
    """What --structure-only expects of one request, whatever the model."""

    def __init__(self, fin, count=None, max_count=None, stop_token=None, eos=None,
                 no_stop_before=0):
        self.fin, self.count, self.max_count = fin, count, max_count
        self.stop_token, self.eos, self.no_stop_before = stop_token, eos, no_stop_before

    def check(self, c: Checks, name, got, last):
        fins = [self.fin] if isinstance(self.fin, FinishReason) else list(self.fin)
        c.check(f"{name}.finish_reason", last.finish_reason in fins,
                f"got {last.finish_reason!r}, want {fins!r}")
        if self.count is not None:
            c.check(f"{name}.num_tokens", len(got) == self.count,
                    f"got {len(got)} tokens, want {self.count}")
        if self.max_count is not None:
            c.check(f"{name}.num_tokens", 0 < len(got) <= self.max_count,
                    f"got {len(got)} tokens, want 1..{self.max_count}")
        stop = self.stop_token
        if last.finish_reason == FinishReason.STOP and stop is not None:
            c.check(f"{name}.stop_reason", last.stop_reason == stop and got[-1] == stop
                    and stop not in got[:-1], f"tokens {got}, stop_reason {last.stop_reason!r}, "
                    f"want the first {stop}")
        elif last.finish_reason == FinishReason.STOP and self.eos is not None:
            c.check(f"{name}.stop_reason", last.stop_reason is None and got[-1] == self.eos
                    and self.eos not in got[:-1], f"tokens {got}, stop_reason "
                    f"{last.stop_reason!r}, want None at the first eos {self.eos}")
        else:
            c.check(f"{name}.stop_reason", last.stop_reason is None,
                    f"got {last.stop_reason!r}, want None")
        if self.no_stop_before:
            masked = {t for t in (stop, self.eos) if t is not None}
            c.check(f"{name}.min_tokens", not masked & set(got[:self.no_stop_before]),
                    f"tokens {got}: a stop token among the first {self.no_stop_before}")
