// Live log of a delivery: follows the event stream and appends each event;
// a phase change refreshes the page's state (actions, phase log).
(function () {
  var log = document.getElementById("live-log");
  if (!log || !window.EventSource) return;
  var url = log.dataset.stream;
  var es = new EventSource(url + "?after=" + (log.dataset.after || "0"));
  function add(kind, text) {
    var line = document.createElement("div");
    line.className = kind;
    line.textContent = text;
    var atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 8;
    log.appendChild(line);
    if (atEnd) log.scrollTop = log.scrollHeight;
    var empty = document.getElementById("live-empty");
    if (empty) empty.remove();
  }

  // One refresh at a time, always of the element on the page now: phase
  // changes come in bursts, and a refresh queued against an element an
  // earlier refresh replaced would land nowhere and leave the page stale.
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.pathname + "?fragment=state", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (!r.ok) throw new Error("status " + r.status);
        return r.text();
      })
      .then(function (html) {
        var tpl = document.createElement("template");
        tpl.innerHTML = html.trim();
        var next = tpl.content.getElementById("state");
        var cur = document.getElementById("state");
        if (!next || !cur) return;
        // Keep a reason being typed.
        var typed = cur.querySelector("input[name=reason]");
        var keep = next.querySelector("input[name=reason]");
        if (typed && keep) keep.value = typed.value;
        cur.replaceWith(next);
      })
      .then(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      }, function () {
        busy = again = false;
        setTimeout(refresh, 1000);
      });
  }

  ["phase", "text", "tool", "note"].forEach(function (kind) {
    es.addEventListener(kind, function (m) {
      var e = JSON.parse(m.data);
      add(kind, e.text);
      if (kind === "phase") refresh();
    });
  });
  // A page left for another must let its stream go: browsers keep left
  // pages (back/forward cache) and allow few connections per server, so
  // streams left open would stall the next pages' requests. A page
  // brought back is stale: load it again.
  window.addEventListener("pagehide", function () { es.close(); });
  window.addEventListener("pageshow", function (e) { if (e.persisted) location.reload(); });
  // After a dropped connection the stream resumes where it left off; the
  // state may have moved meanwhile.
  var opened = false;
  es.addEventListener("open", function () {
    if (opened) refresh();
    opened = true;
  });
})();
