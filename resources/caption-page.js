// captioner's caption page: applies the caption operations the server pushes (Server-Sent Events).
// Operations (captioner/caption_page/hub.py): final {src, at, text}, partial {src, text}, turn {src},
// reset {epoch}; each but reset has a sequence number. Text goes into the page only as text nodes
// (textContent), and appearance only through element.style properties from the server's checked values.
"use strict";
(function () {
  const page = document.body.dataset.page;            // "captions" or "transcript"
  const box = document.getElementById("captions");
  const linesEl = document.getElementById("lines");
  const statusEl = document.getElementById("status");
  const MAX_LINES = page === "captions" ? 60 : 100000;  // DOM lines kept (the rest scrolled away)
  let epoch = null, lastSeq = 0, source = null, retryMs = 500, style = null;
  const open = new Map();                            // source -> its open line {el, label, fin, par, final}
  const sources = new Set();

  function setStatus(text) {
    if (page !== "transcript") return;                // never drawn over a video
    statusEl.hidden = !text;
    statusEl.textContent = text || "";
  }

  function applyStyle(s) {
    style = s;
    const bg = s.bg, a = s.opacity / 100;
    const rgb = [1, 3, 5].map((i) => parseInt(bg.substr(i, 2), 16));
    box.style.backgroundColor = "rgba(" + rgb.join(",") + "," + a + ")";
    box.style.color = s.color;
    box.style.fontSize = s.size + "px";
    box.style.fontFamily = s.font_family;
    box.style.textAlign = s.align;
    if (page === "captions") box.style.maxHeight = "calc(" + (s.lines * 1.25) + "em + 0.3em)";
    updateLabels();
  }

  function updateLabels() {
    const mode = style ? style.labels : "auto";
    const on = mode === "on" || (mode === "auto" && sources.size > 1);
    box.classList.toggle("labels-on", on);
  }

  function newLine(src) {
    const el = document.createElement("p");
    el.className = "line";
    const label = document.createElement("span");
    label.className = "label";
    label.textContent = src ? src + ": " : "";
    const fin = document.createElement("span");
    fin.className = "final";
    const par = document.createElement("span");
    par.className = "partial";
    el.append(label, fin, par);
    linesEl.append(el);
    while (linesEl.childElementCount > MAX_LINES) linesEl.firstElementChild.remove();
    const line = { el: el, fin: fin, par: par, final: "" };
    open.set(src, line);
    if (!sources.has(src)) { sources.add(src); updateLabels(); }
    return line;
  }

  function apply(op) {
    if (op.t === "reset") {
      linesEl.replaceChildren();
      open.clear(); sources.clear(); updateLabels();
      epoch = op.epoch; lastSeq = 0;
      return;
    }
    if (op.seq <= lastSeq) return;                    // already shown (a reconnect's overlap)
    lastSeq = op.seq;
    let line = open.get(op.src);
    if (op.t === "final") {
      if (!line) line = newLine(op.src);
      line.final = line.final.slice(0, op.at) + op.text;
      line.fin.textContent = line.final;
      line.par.textContent = "";
    } else if (op.t === "partial") {
      if (!line) { if (!op.text) return; line = newLine(op.src); }
      line.par.textContent = op.text;
    } else if (op.t === "turn") {
      if (line) { line.par.textContent = ""; line.el.classList.add("turn"); open.delete(op.src); }
    }
  }

  function rendered() {
    box.classList.toggle("empty", linesEl.childElementCount === 0);
    if (page === "transcript" && follow) window.scrollTo(0, document.body.scrollHeight);
  }

  let follow = true;                                  // transcript: keep the newest text in view
  window.addEventListener("scroll", function () {
    follow = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
  });

  function connect() {
    const since = epoch ? "?since=" + encodeURIComponent(epoch + "." + lastSeq) : "";
    source = new EventSource("events" + since);
    source.onopen = function () { retryMs = 500; setStatus(""); };
    source.onmessage = function (e) {
      const op = JSON.parse(e.data);
      apply(op);
      rendered();
    };
    source.onerror = function () {
      setStatus("reconnecting…");
      if (source.readyState === EventSource.CLOSED) {  // refused (server gone, restarted, 503): retry ourselves
        source.close();
        setTimeout(connect, retryMs);
        retryMs = Math.min(retryMs * 2, 5000);
      } else {                                          // the browser retries with Last-Event-ID; make it ours
        source.close();
        setTimeout(connect, 250);
      }
    };
  }

  const params = window.location.search;
  fetch("style/" + page + params, { cache: "no-store" })
    .then(function (r) { return r.json(); })
    .then(function (s) {
      if (s.error) { setStatus(s.error); return; }
      applyStyle(s);
      rendered();
      connect();
    })
    .catch(function () { setStatus("captioner is not reachable"); setTimeout(function () { window.location.reload(); }, 3000); });
})();
