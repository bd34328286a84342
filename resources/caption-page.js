// captioner's caption page: applies the caption operations the server pushes (Server-Sent Events).
// Operations (captioner/caption_page/hub.py): final {src, at, text, spk?}, partial {src, text}, turn {src},
// sound {src, label, text, note}, name {spk, name}, reset {epoch}; each but reset has a sequence number. Text goes into the page only as
// text nodes (textContent), and appearance only through element.style properties from the server's
// checked values. Assistive technology: #lines is a polite live region (role log) that gets each final
// text as a new text node (read once, never the whole line again); the partial tail is aria-hidden, and a
// line's label joins the tree with its first final text, so a screen reader hears "Speaker 2: Hello".
// A sound ("[music]", issue 49) is a closed line of its own above the open lines, italic (CSS .line.sound)
// with its brackets and, for music, a note glyph hidden from assistive technology: apart from speech
// without relying on colour; it never takes a speaker, and the label rule looks past it.
"use strict";
(function () {
  const page = document.body.dataset.page;            // "captions" or "transcript"
  const box = document.getElementById("captions");
  const linesEl = document.getElementById("lines");
  const statusEl = document.getElementById("status");
  const MAX_LINES = page === "captions" ? 60 : 100000;  // DOM lines kept (the rest scrolled away)
  let epoch = null, lastSeq = 0, source = null, retryMs = 500, style = null;
  const open = new Map();                            // source -> its open line {el, label, fin, par, final, src, spk}
  const sources = new Set();
  const names = new Map();                           // speaker id -> the name the user gave it

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
    showLabels(linesEl.firstElementChild, false);
  }

  // Who said a line: its speaker's name or id, else its source's label ("You", "Meeting").
  function who(el) { return el.dataset.spk ? names.get(el.dataset.spk) || el.dataset.spk : el.dataset.src; }

  // A line shows its label (labels=on: every line; off: none; auto: where who speaks changes from the
  // line before, once the engine gave a speaker or two sources spoke).
  function labelOne(el) {
    const mode = style ? style.labels : "auto";
    if (el.classList.contains("sound")) {           // a sound: its source's label where sources are told apart
      el.classList.toggle("show-label", mode === "on" || (mode === "auto" && sources.size > 1));
      return;
    }
    let prev = el.previousElementSibling;
    while (prev && prev.classList.contains("sound")) prev = prev.previousElementSibling;
    const key = function (p) { return p.dataset.spk ? "s" + p.dataset.spk : "r" + p.dataset.src; };
    const changed = !prev || key(el) !== key(prev);
    el.classList.toggle("show-label", mode === "on" || (mode === "auto" && changed
      && (!!el.dataset.spk || sources.size > 1)));
  }

  // Labels of el and every line after it, or (near) of el and the line after it only.
  function showLabels(el, near) {
    if (near) { labelOne(el); if (el.nextElementSibling) labelOne(el.nextElementSibling); return; }
    for (; el; el = el.nextElementSibling) labelOne(el);
  }

  function relabel(el) {
    const name = who(el);
    el.querySelector(".label").textContent = name ? name + ": " : "";
  }

  function newLine(src, spk) {
    const el = document.createElement("p");
    el.className = "line";
    el.dataset.src = src;
    if (spk) el.dataset.spk = spk;
    const label = document.createElement("span");
    label.className = "label";
    label.setAttribute("aria-hidden", "true");        // joins the live region with the line's first final text
    const fin = document.createElement("span");
    fin.className = "final";
    const par = document.createElement("span");
    par.className = "partial";
    par.setAttribute("aria-hidden", "true");          // the unstable tail is never read out
    el.append(label, fin, par);
    relabel(el);
    linesEl.append(el);
    let trimmed = false;
    while (linesEl.childElementCount > MAX_LINES) { linesEl.firstElementChild.remove(); trimmed = true; }
    const line = { el: el, fin: fin, par: par, final: "", src: src };
    open.set(src, line);
    if (!sources.has(src)) { sources.add(src); showLabels(linesEl.firstElementChild, false); }
    else { showLabels(el, true); if (trimmed) labelOne(linesEl.firstElementChild); }
    roll();
    return line;
  }

  // A sound's line: closed, above the open lines at the bottom (the words being said stay last).
  function soundLine(op) {
    const el = document.createElement("p");
    el.className = "line sound";
    el.dataset.src = op.src;
    const label = document.createElement("span");
    label.className = "label";
    const glyph = document.createElement("span");
    glyph.className = "glyph";
    glyph.setAttribute("aria-hidden", "true");
    glyph.textContent = op.note ? "\u266a " : "";
    const fin = document.createElement("span");
    fin.className = "final";
    fin.textContent = op.text;
    const par = document.createElement("span");     // never filled: the same shape as a line of speech
    par.className = "partial";
    par.setAttribute("aria-hidden", "true");
    el.append(label, glyph, fin, par);
    relabel(el);
    const openEls = new Set(Array.from(open.values(), function (l) { return l.el; }));
    let before = null;
    for (let c = linesEl.lastElementChild; c && openEls.has(c); c = c.previousElementSibling) before = c;
    linesEl.insertBefore(el, before);
    while (linesEl.childElementCount > MAX_LINES) linesEl.firstElementChild.remove();
    if (!sources.has(op.src)) { sources.add(op.src); showLabels(linesEl.firstElementChild, false); }
    else showLabels(el, true);
    roll();
  }

  // The rolling animation: the lines move up by one line (CSS; none under prefers-reduced-motion).
  function roll() {
    if (page !== "captions") return;
    linesEl.classList.remove("roll");
    void linesEl.offsetWidth;                         // restart the animation
    linesEl.classList.add("roll");
  }

  function setFinal(line, at, text) {
    const first = line.final === "";
    if (at === line.final.length) line.fin.append(text);  // a new text node: only the new words are read
    else line.fin.textContent = line.final.slice(0, at) + text;
    line.final = line.final.slice(0, at) + text;
    line.par.textContent = "";
    if (first && line.final) line.el.querySelector(".label").removeAttribute("aria-hidden");
  }

  function apply(op) {
    if (op.t === "reset") {
      linesEl.replaceChildren();
      open.clear(); sources.clear(); names.clear();  // the hub sends the names again
      epoch = op.epoch; lastSeq = 0;
      return;
    }
    if (op.seq <= lastSeq) return;                    // already shown (a reconnect's overlap)
    lastSeq = op.seq;
    let line = open.get(op.src);
    if (op.t === "name") {
      if (op.name) names.set(op.spk, op.name); else names.delete(op.spk);
      linesEl.querySelectorAll(".line").forEach(function (el) { if (el.dataset.spk === op.spk) relabel(el); });
    } else if (op.t === "final") {
      if (line && op.spk && op.spk !== line.el.dataset.spk) {
        if (line.final) { line.par.textContent = ""; open.delete(op.src); line = null; }  // another voice
        else { line.el.dataset.spk = op.spk; relabel(line.el); showLabels(line.el, true); }
      }
      if (!line) line = newLine(op.src, op.spk);
      setFinal(line, op.at, op.text);
    } else if (op.t === "partial") {
      if (!line) { if (!op.text) return; line = newLine(op.src); }
      line.par.textContent = op.text;
    } else if (op.t === "sound") {
      soundLine(op);
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
