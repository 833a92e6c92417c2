// Live log of a delivery: follows the event stream and appends each event;
// a phase change reloads the page's state (actions, phase log) with htmx.
(function () {
  var log = document.getElementById("live-log");
  if (!log || !window.EventSource) return;
  var url = log.dataset.stream;
  var es = new EventSource(url + "?after=" + (log.dataset.after || "0"));
  var state = document.getElementById("state");
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
  ["phase", "text", "tool", "note"].forEach(function (kind) {
    es.addEventListener(kind, function (m) {
      var e = JSON.parse(m.data);
      add(kind, e.text);
      if (kind === "phase" && state && window.htmx) {
        htmx.ajax("GET", location.pathname + "?fragment=state", { target: "#state", swap: "outerHTML" });
      }
    });
  });
})();
