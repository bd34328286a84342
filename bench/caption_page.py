"""The caption page's costs, measured: DOM latency in a real browser, the engine with 20 viewers,
server memory with a stalled viewer, and a viewer back after 10 s away.

1. ``dom``: events published to the hub on loopback -> the text in a headless Chromium's DOM
   (a MutationObserver stamps ``Date.now()``; Python stamps ``time.time()`` at publish, same clock);
   finals and partials alternating every 50 ms; alone, and with 20 more viewers (19 reading sockets in
   another process, one that never reads).
2. ``engine``: the default model captions a synthetic meeting (bench/meeting_audio.py, espeak-ng) live
   through ``LiveCaptioner``, runs alternating *no page* / *page with 20 viewers (one never reading)*:
   final and partial latency (wall time of the event minus wall time its audio was played), RSS.
3. ``flood``: 20 000 finals of 500 characters as fast as Python can publish them, two stalled viewers
   and one reading (in another process): the stalled ones are dropped; the server's memory is the
   session's transcript (kept for late viewers) plus bounded queues (tracemalloc, RSS).
4. ``reconnect``: the transcript page is open; the server goes away for 10 s while 30 finals are said;
   back on the same port, the page shows every final exactly once.

    python bench/caption_page.py --minutes 1 --pairs 2 --out bench/results/caption_page.json
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from captioner.caption_page.address import Bind  # noqa: E402
from captioner.caption_page.hub import CaptionHub  # noqa: E402
from captioner.caption_page.server import CaptionServer  # noqa: E402
from captioner.events import TextDelta, TurnBoundary  # noqa: E402

OBSERVER_JS = """
window.__seen = {}; window.__times = [];
new MutationObserver(function () {
  var t = Date.now(), text = document.getElementById('lines').textContent;
  var found = text.match(/m[0-9]+x/g) || [];
  for (var i = 0; i < found.length; i++) if (!(found[i] in window.__seen)) window.__seen[found[i]] = t;
}).observe(document.getElementById('lines'), {subtree: true, childList: true, characterData: true});
"""

VIEWERS_PY = """
import socket, sys, threading, time
port, n = int(sys.argv[1]), int(sys.argv[2])
def read(s):
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /events HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n\\r\\n" % port)
    socks.append(s)
    if i:  # the first one never reads
        threading.Thread(target=read, args=(s,), daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
"""


def pct(values, q):
    v = sorted(values)
    return round(v[min(len(v) - 1, int(round(q / 100 * (len(v) - 1))))], 4) if v else None


def summary(values):
    return {"n": len(values), "p50": pct(values, 50), "p95": pct(values, 95), "max": pct(values, 100),
            "mean": round(statistics.fmean(values), 4) if values else None}


def rss_mb():
    with open("/proc/self/statm") as f:
        return round(int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)


def viewers(port, n=20):
    """``n`` viewers in another process (the first never reads); returns the process."""
    proc = subprocess.Popen([sys.executable, "-c", VIEWERS_PY, str(port), str(n)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def dom_latency(with_viewers: bool, events: int = 200) -> dict:
    from tests.browser import chromium, wait_for

    hub = CaptionHub()
    srv = CaptionServer(hub, Bind("127.0.0.1", 0)).start()
    extra = viewers(srv.port) if with_viewers else None
    d = chromium(960, 300)
    try:
        d.get(srv.url + "?lines=3")
        wait_for(d, "return document.getElementById('captions').style.fontSize !== ''")
        d.execute_script(OBSERVER_JS)
        sent = {}
        for i in range(events):
            marker = f"m{i}x"
            sent[marker] = time.time() * 1000
            final = i % 2 == 1
            hub.publish(TextDelta(f" word {marker}", i * 0.1, i * 0.1 + 0.1, final, "You"))
            if i % 20 == 19:
                hub.publish(TurnBoundary(i * 0.1, source="You"))
            time.sleep(0.05)
        wait_for(d, "return Object.keys(window.__seen).length >= arguments[0]", 10, events)
        seen = d.execute_script("return window.__seen")
    finally:
        d.quit()
        if extra is not None:
            extra.kill()
        srv.stop()
    lat = [seen[m] - t for m, t in sent.items() if m in seen]
    return {"viewers": 21 if with_viewers else 1, "events": events, "shown": len(lat),
            "latency_ms": summary(lat), "server_dropped": srv.dropped}


def engine_runs(minutes: float, pairs: int) -> dict:
    from bench.latency import thread_cpu
    from bench.meeting_audio import make_meeting
    from captioner.asr import load_backend
    from captioner.audio.filesource import FileSource
    from captioner.engine.live import LiveCaptioner

    tmp = Path(tempfile.mkdtemp())
    wav = tmp / "meeting.wav"
    make_meeting(wav, minutes, seed=10)
    backend = load_backend("default")
    runs = []
    for i in range(2 * pairs):
        page = i % 2 == 1
        hub = CaptionHub()
        srv = CaptionServer(hub, Bind("127.0.0.1", 0)).start() if page else None
        extra = viewers(srv.port) if page else None
        records, publish_s = [], []

        def on_event(ev, hub=hub, page=page, records=records, publish_s=publish_s):
            records.append((time.monotonic(), ev))
            if page:  # what the engine's thread pays for the page: one queue append (+ a wake-up)
                t = time.perf_counter()
                hub.publish(ev)
                publish_s.append(time.perf_counter() - t)

        src = FileSource(str(wav), label="Meeting", realtime=True)
        rss0 = rss_mb()
        cpu0, wall0 = thread_cpu(), time.monotonic()
        live = LiveCaptioner(backend, [src], on_event)
        live.start()
        live.wait()
        t0 = src._t0
        final = [now - (t0 + ev.end) for now, ev in records
                 if isinstance(ev, TextDelta) and ev.final and ev.text.strip()]
        partial = [now - (t0 + ev.end) for now, ev in records
                   if isinstance(ev, TextDelta) and not ev.final and ev.text.strip()]
        run = {"page": page, "final_latency_s": summary(final), "partial_latency_s": summary(partial),
               "final_values": [round(x, 4) for x in final], "partial_values": [round(x, 4) for x in partial],
               "rss_mb": {"start": rss0, "end": rss_mb()}, "loadavg": [round(x, 2) for x in os.getloadavg()]}
        if page:
            cpu = thread_cpu()
            page_cpu = sum(v - cpu0.get(k, 0.0) for k, v in cpu.items() if k.startswith("caption-page"))
            run["page_thread_cpu_s_per_s"] = round(page_cpu / (time.monotonic() - wall0), 5)
            run["publish_us"] = summary([x * 1e6 for x in publish_s])
            run["viewers_at_end"] = srv.viewers
            run["dropped"] = srv.dropped
            run["ops"] = hub.last_seq
            extra.kill()
            srv.stop()
        runs.append(run)
        print(json.dumps({k: run[k] for k in ("page", "final_latency_s", "partial_latency_s")}), file=sys.stderr)

    def median_of(page, key, q):
        return statistics.median(r[key][q] for r in runs if r["page"] == page)

    ratio = {f"{key}_{q}": round(median_of(True, key, q) / median_of(False, key, q), 3)
             for key in ("final_latency_s", "partial_latency_s") for q in ("p50", "p95")}
    pooled = {}
    for key in ("final", "partial"):
        on = [x for r in runs if r["page"] for x in r[f"{key}_values"]]
        off = [x for r in runs if not r["page"] for x in r[f"{key}_values"]]
        pooled[key] = {"without": summary(off), "with": summary(on),
                       "ratio_p50": round(pct(on, 50) / pct(off, 50), 3), "ratio_p95": round(pct(on, 95) / pct(off, 95), 3)}
    return {"minutes": minutes, "pairs": pairs, "runs": runs, "with_page_over_without (median of runs)": ratio,
            "pooled_events": pooled}


def flood(ops: int = 20000) -> dict:
    hub = CaptionHub()
    srv = CaptionServer(hub, Bind("127.0.0.1", 0)).start()
    stalled = socket.create_connection(("127.0.0.1", srv.port))
    stalled.sendall(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n\r\n".encode())
    reader = viewers(srv.port, 2)  # one more stalled (its first) and one reading
    deadline = time.monotonic() + 5
    while srv.viewers < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    rss0 = rss_mb()
    tracemalloc.start()
    text = " " + "y" * 500
    samples = []
    for i in range(ops):  # finals: none can be merged; the hub keeps them all (the session's transcript)
        hub.publish(TextDelta(f" {i}" + text, 0, 1, True, "You"))
        if i % 1000 == 999:
            time.sleep(0.05)
            samples.append(tracemalloc.get_traced_memory()[0])
    deadline = time.monotonic() + 10
    while srv.dropped < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    result = {"ops": ops, "op_bytes": len(text), "session_log_mb": round(hub._log_bytes / 2**20, 2),
              "stalled_viewers_dropped": srv.dropped,
              "viewers_left": srv.viewers, "traced_mb": {"peak": round(peak / 2**20, 2), "end": round(cur / 2**20, 2),
                                                         "per_1000_ops": [round(s / 2**20, 2) for s in samples]},
              "rss_mb": {"before": rss0, "after": rss_mb()}}
    reader.kill()
    stalled.close()
    srv.stop()
    return result


def reconnect(away_s: float = 10.0, finals: int = 30) -> dict:
    from tests.browser import chromium, wait_for

    hub = CaptionHub()
    srv = CaptionServer(hub, Bind("127.0.0.1", 0)).start()
    port = srv.port
    d = chromium(960, 600)
    try:
        d.get(srv.transcript_url)
        hub.publish(TextDelta("before m0x", 0, 1, True, "You"))
        wait_for(d, "return document.getElementById('lines').textContent.indexOf('m0x') >= 0")
        srv.stop()
        t_away = time.monotonic()
        for i in range(1, finals + 1):
            hub.publish(TextDelta(f" m{i}x", i, i + 1, True, "You"))
            if i % 10 == 0:
                hub.publish(TurnBoundary(i + 1.0, source="You"))
            time.sleep(away_s / finals)
        hub.publish(TextDelta(" tail", 0, 1, False, "You"))
        srv = CaptionServer(hub, Bind("127.0.0.1", port)).start()
        away = time.monotonic() - t_away
        t_back = time.monotonic()
        wait_for(d, "return document.getElementById('lines').textContent.indexOf('m%dx') >= 0" % finals, 30)
        caught_up = time.monotonic() - t_back
        text = d.execute_script("return document.getElementById('lines').textContent")
    finally:
        d.quit()
        srv.stop()
    counts = {f"m{i}x": text.count(f"m{i}x") for i in range(finals + 1)}
    return {"away_s": round(away, 1), "finals_while_away": finals, "caught_up_s": round(caught_up, 2),
            "every_final_once": all(c == 1 for c in counts.values()),
            "counts_not_1": {k: c for k, c in counts.items() if c != 1}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=1.0, help="length of the meeting per engine run")
    ap.add_argument("--pairs", type=int, default=2, help="engine runs without/with the page, alternating")
    ap.add_argument("--parts", default="dom,flood,reconnect,engine")
    ap.add_argument("--out", default="bench/results/caption_page.json")
    args = ap.parse_args()
    t = time.perf_counter()
    import aiohttp.web  # noqa: F401 - what switching the page on costs once

    report = {"command": "python bench/caption_page.py " + " ".join(sys.argv[1:]),
              "cpu_count": os.cpu_count(), "loadavg_before": [round(x, 2) for x in os.getloadavg()],
              "aiohttp_import_s": round(time.perf_counter() - t, 3),
              "note": "2-core development machine shared with other work: see loadavg"}
    parts = args.parts.split(",")
    if "dom" in parts:
        report["dom"] = [dom_latency(False), dom_latency(True)]
        print(json.dumps(report["dom"]), file=sys.stderr)
    if "flood" in parts:
        report["flood"] = flood()
        print(json.dumps(report["flood"]), file=sys.stderr)
    if "reconnect" in parts:
        report["reconnect"] = reconnect()
        print(json.dumps(report["reconnect"]), file=sys.stderr)
    if "engine" in parts:
        report["engine"] = engine_runs(args.minutes, args.pairs)
    report["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    print(json.dumps({k: report[k] for k in report if k in ("aiohttp_import_s",)}))


if __name__ == "__main__":
    main()
