"""Scheduling policy for optional work (issue 10), with injected compute cost and a fake clock.

A deterministic simulation of the live decode loop: audio arrives at real time on a fake
clock; every 100 ms chunk costs ``required_rtf * 0.1`` s of required work (segmentation,
finals); a partial re-decode of the open line costs ``fixed + per_s * open_line_s``.
Nothing sleeps: the "model" advances the fake clock by its cost.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from captioner.asr.moonshine.agreement import LineAgreement, norm_word
from captioner.engine.scheduler import DecodeBudget

CHUNK = 0.1


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        self.t += dt


@dataclass
class SimResult:
    backlog_max: float = 0.0
    backlog_end: float = 0.0
    finals: list = field(default_factory=list)
    partials: list = field(default_factory=list)
    busy_required: float = 0.0
    busy_optional: float = 0.0


def simulate(
    seconds: float,
    *,
    sessions: int = 1,
    required_rtf: float = 0.4,
    partial_fixed: float = 0.05,
    partial_per_s: float = 0.27,
    line_s: float = 4.0,
    pause_s: float = 2.0,
    policy: str = "budget",
    naive_interval_s: float = 0.5,
    budget: DecodeBudget | None = None,
    clock: FakeClock | None = None,
) -> SimResult:
    """Play ``seconds`` of audio per session through the policy; returns what happened."""
    clock = clock or FakeClock()
    budget = budget or DecodeBudget(clock=clock)
    res = SimResult(finals=[0] * sessions, partials=[0] * sessions)
    decoded = [0.0] * sessions
    last_partial = [-1e9] * sessions
    cycle = line_s + pause_s
    while min(decoded) < seconds - 1e-9:
        avail = min(clock(), seconds)
        backlog = max(avail - d for d in decoded)
        res.backlog_max = max(res.backlog_max, backlog)
        budget.report_backlog(backlog)
        ready = [i for i in range(sessions) if decoded[i] + CHUNK <= avail + 1e-9]
        if not ready:
            clock.t = min(decoded) + CHUNK  # idle until the next chunk has arrived
            continue
        for i in ready:
            cost = required_rtf * CHUNK
            clock.advance(cost)
            budget.record_required(cost)
            res.busy_required += cost
            decoded[i] = round(decoded[i] + CHUNK, 6)
            phase = decoded[i] % cycle
            if abs(phase - line_s) < CHUNK / 2:
                res.finals[i] += 1  # the line completes: its final is always decoded
            open_s = phase if phase < line_s - CHUNK / 2 else 0.0
            if open_s < 0.3:
                continue
            if policy == "budget":
                allowed = budget.allow_optional(i, open_s)
            else:  # the runtime's old behaviour: re-decode every 0.5 s of audio, whatever it costs
                allowed = decoded[i] - last_partial[i] >= naive_interval_s - 1e-9
                if allowed:
                    last_partial[i] = decoded[i]
            if allowed:
                pc = partial_fixed + partial_per_s * open_s
                clock.advance(pc)
                budget.record_optional(pc, open_s)
                res.busy_optional += pc
                res.partials[i] += 1
    res.backlog_end = min(clock(), seconds) - min(decoded) if clock() < seconds else clock() - seconds
    return res


def test_backlog_stays_bounded_when_partials_would_cost_1_2x_real_time():
    # required 0.4 x real time; partials every 0.5 s would add ~0.8 x: 1.2 x in total
    hour = 3600.0
    naive = simulate(hour, policy="naive")
    assert (naive.busy_required + naive.busy_optional) / hour > 1.15
    assert naive.backlog_max > 300  # the old behaviour falls further behind all the time
    sched = simulate(hour)
    # bounded by one partial's cost (up to 1.1 s here) plus a chunk, for the whole hour
    assert sched.backlog_max < 1.5, sched.backlog_max
    assert sched.backlog_end < 0.5
    assert sum(sched.partials) >= 600  # partials still come, as often as the headroom allows
    total_load = (sched.busy_required + sched.busy_optional) / hour
    assert total_load < 0.85


def test_partials_are_shed_before_finals_when_the_model_is_too_slow():
    clock = FakeClock()
    budget = DecodeBudget(clock=clock)
    res = simulate(600.0, required_rtf=1.2, budget=budget, clock=clock)
    cycles = 600.0 / 6.0
    assert res.finals == [cycles]  # every line still gets its final
    assert res.partials[0] <= 3  # only before the backlog builds up
    assert budget.shed > 1000
    assert budget.overloaded  # the engine turns this into the "too slow" notice
    assert res.backlog_max > 100  # unavoidable: the required work alone is 1.2 x real time


def test_partials_resume_when_the_engine_catches_up():
    clock = FakeClock()
    budget = DecodeBudget(clock=clock)
    budget.report_backlog(3.0)
    assert not budget.allow_optional("a", 2.0)
    budget.report_backlog(0.1)
    assert budget.allow_optional("a", 2.0)
    assert not budget.allow_optional("a", 2.0)  # not due again right away
    clock.advance(5.0)
    assert budget.allow_optional("a", 2.0)


def test_two_sessions_share_the_budget_fairly():
    # the same required load in both runs (0.3 x real time), so the same headroom
    one = simulate(1800.0, sessions=1, required_rtf=0.3)
    two = simulate(1800.0, sessions=2, required_rtf=0.15)
    assert two.backlog_max < 1.5
    a, b = two.partials
    assert abs(a - b) <= 0.1 * max(a, b), two.partials
    # the headroom is split, not doubled: two sessions together get about what one got
    assert 0.7 * one.partials[0] <= a + b <= 1.3 * one.partials[0]
    assert two.finals[0] == two.finals[1] == 1800.0 / 6.0


def test_interval_follows_the_measured_headroom():
    clock = FakeClock()
    budget = DecodeBudget(clock=clock, target_load=0.75, min_interval_s=0.3)
    for _ in range(100):  # 50 % required load
        clock.advance(0.1)
        budget.record_required(0.05)
    budget.record_optional(0.45, 2.0)
    cost = budget.predicted_cost(2.0)
    budget.allow_optional("a", 2.0)
    assert budget.interval_s(2.0) == pytest.approx(cost / 0.25, rel=0.05)
    budget.allow_optional("b", 2.0)  # a second session asking: each gets half the headroom
    assert budget.interval_s(2.0) == pytest.approx(2 * cost / 0.25, rel=0.05)


def _words(text: str) -> list[str]:
    return [norm_word(w) for w in text.split()]


def test_agreed_prefix_commits_never_rewrite_final_text():
    rng = random.Random(3)
    vocab = "the meeting with partners is moved to thursday afternoon please send report".split()
    for trial in range(300):
        truth = [rng.choice(vocab) for _ in range(rng.randint(3, 14))]
        ag = LineAgreement()
        shown_final: list[str] = []  # everything emitted as final for this line, in order
        for n in range(1, len(truth) + 1):
            hyp = list(truth[:n])
            if hyp and rng.random() < 0.4:  # the unstable tail: last word misheard
                hyp[-1] = rng.choice(vocab)
            if len(hyp) > 2 and rng.random() < 0.1:  # sometimes a word inside changes too
                hyp[rng.randrange(len(hyp) - 1)] = rng.choice(vocab)
            before = list(ag.committed)
            new, partial = ag.update(" ".join(hyp))
            assert ag.committed[: len(before)] == before  # committed words never change
            if new:
                shown_final += new.split()
            assert shown_final == ag.committed
        committed = list(ag.committed)
        rest = ag.finish(" ".join(truth))
        final_line = shown_final + rest.split()
        # what was final stays at the front, and the line's last words always arrive
        assert final_line[: len(committed)] == committed
        if rest:
            assert _words(rest) == _words(" ".join(truth))[-len(rest.split()) :]


def test_agreement_commits_while_the_sentence_is_still_spoken():
    ag = LineAgreement()
    assert ag.update("The meeting") == ("", "The meeting")
    assert ag.update("The meeting with the politors.") == ("The", "meeting with the politors.")
    new, partial = ag.update("The meeting with the partners is moved")
    assert new == "meeting with the" and partial == "partners is moved"
    assert ag.finish("The meeting with the partners is moved to Thursday afternoon.") == (
        "partners is moved to Thursday afternoon."
    )
    assert ag.committed == []  # reset for the next line


def test_a_committed_word_that_recurs_later_in_the_line_drops_no_words():
    """The 20-minute meeting's lost words: "Blade, and" was committed from re-decodes reading
    "Blade and the remaining ticket scout"; the line's final reading put "then" where they had
    "and", and an "and" further on. Aligning the committed "and" with that one dropped the
    five words between; they were on screen as the partial tail."""
    ag = LineAgreement(holdback=0)
    ag.committed = ["Blade,", "and"]
    final = "Blade, then the remaining ticket scout and the support team."
    assert ag.finish(final) == "the remaining ticket scout and the support team."
    ag.committed = ["Blade,", "and"]
    assert ag.after_committed("Blade and the remaining ticket".split()) == "the remaining ticket".split()
    # a reading that splits or adds a word or two still continues after the committed ones
    ag.committed = ["Good", "morning", "everyone,", "thank"]
    assert ag.finish("Good morning, every one, thank you for joining.") == "you for joining."
    ag.committed = ["Good", "morning", "everyone,", "thank"]
    assert ag.finish("So good morning, all of everyone, thank you.") == "you."


def test_nothing_is_committed_from_the_first_seconds_of_a_line():
    """Two early re-decodes that agree on a misreading ("That office" for "The office")
    must not lock it in: below ``min_clip_s`` of decoded line a hypothesis is only kept for
    the next comparison, and the first long-enough re-decode commits what it agrees on."""
    ag = LineAgreement(holdback=1, min_clip_s=2.5)
    assert ag.update("That office", 1.0) == ("", "That office")
    assert ag.update("That office will be", 1.5) == ("", "That office will be")
    assert ag.update("That office will be closed", 2.0) == ("", "That office will be closed")
    assert ag.committed == []
    # 2.5 s decoded: it now reads the first word right; only the agreed words after it wait
    assert ag.update("The office will be closed on", 2.5) == ("", "The office will be closed on")
    new, partial = ag.update("The office will be closed on Monday", 3.0)
    assert (new, partial) == ("The office will be closed", "on Monday")
    assert ag.finish("The office will be closed on Monday because of the holiday.") == (
        "on Monday because of the holiday."
    )
    # without a clip length (a backend that cannot tell) the plain LocalAgreement-2 holds
    ag = LineAgreement(holdback=1, min_clip_s=2.5)
    ag.update("That office")
    assert ag.update("That office will")[0] == "That"


def test_agreement_compares_re_decodes_at_least_min_gap_apart():
    """Re-decodes ~0.3 s apart share most of their audio and agree on the same misreading; with
    ``min_gap_s`` a hypothesis is compared with the newest one at least that much shorter."""
    ag = LineAgreement(holdback=0, min_clip_s=2.5, min_gap_s=2.0)
    assert ag.update("That office will", 2.5) == ("", "That office will")
    assert ag.update("That office will be", 2.8) == ("", "That office will be")  # 0.3 s apart: no compare
    assert ag.update("That office will be closed", 3.1) == ("", "That office will be closed")
    assert ag.update("The office will be closed on", 4.4) == ("", "The office will be closed on")
    # 4.8 s is >= 2.0 s after 2.8 s: compared with "That office will be", they disagree on word 1
    assert ag.update("The office will be closed on Monday", 4.8)[0] == ""
    # 6.4 s vs 4.4 s (the newest at least 2 s shorter): both read "The office ..."
    new, partial = ag.update("The office will be closed on Monday because", 6.4)
    assert new == "The office will be closed on" and partial == "Monday because"
    assert len(ag.history) <= 3  # bounded: older hypotheses than the newest usable are gone
    # the same sequence compared consecutively locks in the misreading
    plain = LineAgreement(holdback=0, min_clip_s=2.5)
    plain.update("That office will", 2.5)
    assert plain.update("That office will be", 2.8)[0] == "That office will"


def _sizes(budget: DecodeBudget) -> tuple[int, int, int, int]:
    return len(budget._required), len(budget._optional), len(budget._asked), len(budget._last)


def test_memory_is_bounded_over_hours_of_simulated_audio():
    clock = FakeClock()
    budget = DecodeBudget(clock=clock)
    simulate(3600.0, sessions=2, required_rtf=0.15, budget=budget, clock=clock)
    after_one_hour = _sizes(budget)
    # two more hours; then a third session that comes and goes is forgotten after a minute
    simulate(3 * 3600.0, sessions=2, required_rtf=0.15, budget=budget, clock=clock)
    budget.allow_optional("visitor", 2.0)
    clock.advance(61.0)
    budget.allow_optional(0, 2.0)
    window_entries = int(budget.window_s / CHUNK) * 4  # a few records per chunk, one window long
    sizes = _sizes(budget)
    assert sizes[0] <= window_entries and sizes[1] <= window_entries
    assert after_one_hour[0] <= window_entries
    assert "visitor" not in budget._asked and len(budget._asked) <= 2 and len(budget._last) <= 2
    ag = LineAgreement()
    for _ in range(10000):  # a LineAgreement holds one line at most
        ag.update("one two three four five six")
        ag.finish("one two three four five six seven")
    assert ag.committed == [] and ag.previous == []


def test_live_engine_reports_backlog_to_the_budget_and_says_when_the_model_is_too_slow():
    """The real LiveCaptioner: it feeds its backlog to the backend's budget, and an overloaded
    budget becomes one plain ``too_slow`` notice (captions are kept, nothing is dropped)."""
    import threading

    from captioner.audio.devices import PulseInventory, resolve_microphone
    from captioner.audio.microphone import MicrophoneSource
    from captioner.engine.live import LiveCaptioner
    from captioner.events import Notice, Stats
    from tests.audio_fakes import FakeBackend, FakeSD, device_table, tone
    from tests.audio_fakes import FakeClock as SourceClock

    clock = FakeClock()
    budget = DecodeBudget(clock=clock)
    for _ in range(200):  # 20 s in which the required work took 1.2 x real time
        clock.advance(0.1)
        budget.record_required(0.12)
    assert budget.overloaded
    backend = FakeBackend(batch_size=1)
    backend.budget = budget
    events, got_notice = [], threading.Event()

    def on_event(ev):
        events.append(ev)
        if isinstance(ev, Notice) and ev.code == "too_slow":
            got_notice.set()

    sd = FakeSD(device_table())
    mic = MicrophoneSource(resolve_microphone(2, sd, PulseInventory()), sd=sd, clock=SourceClock())
    live = LiveCaptioner(backend, [mic], on_event, clock=SourceClock(), stats_interval_s=0.0)
    live.start()
    for _ in range(5):
        sd.streams[0].deliver(tone(0.1, 16000))
    assert got_notice.wait(30)
    assert live.stop(timeout=30)
    notices = [e for e in events if isinstance(e, Notice) and e.code == "too_slow"]
    assert len(notices) == 1
    assert "too slow" in notices[0].message and "choose a faster model" in notices[0].message
    stats = [e for e in events if isinstance(e, Stats)]
    assert stats and stats[-1].load == pytest.approx(budget.load()) and stats[-1].dropped_s == 0.0


def test_agreed_words_the_model_is_unsure_of_wait_for_the_final_reading():
    """The 20-minute meeting's early misreadings: two re-decodes 2 s apart both read "That
    sound freeze" for a line's first words, the model unsure of "sound" and "freeze" each
    time; the line's final reading read them right, but they were final already. With the
    words' confidences, the agreed words are committed only up to the first unsure one."""
    unsure = [-0.05, -0.9, -0.6, -0.01, -0.01]
    ag = LineAgreement(holdback=0, min_clip_s=2.5, min_gap_s=2.0, commit_logprob=-0.2)
    assert ag.update("That sound freeze on the", 2.5, unsure) == ("", "That sound freeze on the")
    new, partial = ag.update("That sound freeze on the plan", 4.5, unsure + [-0.1])
    assert (new, partial) == ("That", "sound freeze on the plan")
    assert ag.finish("That sounds fair on the plan.") == "sounds fair on the plan."
    # without confidences (another model) the agreed words are all committed, as before
    plain = LineAgreement(holdback=0, min_clip_s=2.5, min_gap_s=2.0, commit_logprob=-0.2)
    plain.update("That sound freeze on the", 2.5)
    assert plain.update("That sound freeze on the plan", 4.5) == ("That sound freeze on the", "plan")
    # a word the model is sure of commits; the first unsure one stops the rest, sure or not
    sure = LineAgreement(holdback=0, min_clip_s=2.5, min_gap_s=2.0, commit_logprob=-0.2)
    sure.update("That sound freeze on the", 2.5, [-0.05] * 5)
    assert sure.update("That sound freeze on the plan", 4.5, [-0.05, -0.01, -0.3, -0.01, -0.01, -0.1]) == (
        "That sound", "freeze on the plan")
    with pytest.raises(ValueError):
        sure.update("one two", 6.5, [-0.1])
