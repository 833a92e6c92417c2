// The dashboard's live parts, on every page: the count of deliveries
// waiting for a person (nav, tab title, opt-in notifications), the
// reconnecting notice, ticking durations and relative times, lists and
// boards that refresh when a delivery changes, and on a delivery's page
// its live log and state. Events come from the browser's one shared
// stream (stream.js).
//
// A phone must not feel it: nothing here runs long on load, and nothing
// shown moves once drawn. Controls that only work with this script are
// in the page from the start, taking their place but unseen (the
// "reserved" class), and are shown in that place.
(function () {
  "use strict";
  var body = document.body;
  var log = document.getElementById("live-log");
  var watching = log && !log.hasAttribute("data-closed") ? log.dataset.id : null;

  // --- the stream -------------------------------------------------------
  var send = function () {};
  function connect() {
    var url = body.dataset.streamWorker;
    if (window.SharedWorker && url) {
      try {
        var w = new SharedWorker(url, { name: "baton-live" });
        w.port.addEventListener("message", function (m) { receive(m.data); });
        w.port.start();
        send = function (m) { w.port.postMessage(m); };
        start();
        return;
      } catch (e) { /* fall through: a hub of this page's own */ }
    }
    if (!window.EventSource || !url) return;
    var s = document.createElement("script");
    s.src = url;
    s.addEventListener("load", function () {
      var hub = new window.BatonHub("/live"), page = null;
      send = function (m) { if (page) hub.handle(page, m); };
      function open() { page = hub.add(receive); start(); }
      function close() { if (page) { hub.handle(page, { type: "bye" }); page = null; } }
      // A page's own stream holds a connection: only while it is seen.
      document.addEventListener("visibilitychange", function () { if (document.hidden) close(); else open(); });
      if (!document.hidden) open();
    });
    document.head.appendChild(s);
  }
  function start() {
    send({ type: "hello" });
    if (watching) send({ type: "watch", id: watching, after: Number(log.dataset.after || 0) });
  }
  window.addEventListener("pagehide", function () { send({ type: "bye" }); });
  // A page brought back from the back/forward cache is stale.
  window.addEventListener("pageshow", function (e) { if (e.persisted) location.reload(); });

  var wasDown = false;
  function receive(m) {
    if (m.type === "status") {
      var conn = document.getElementById("conn");
      if (conn) conn.hidden = m.connected;
      if (m.connected && wasDown) caughtUp();
      wasDown = !m.connected;
    } else if (m.type === "pulse") {
      pulse(m.pulse);
    } else if (m.type === "event" && log && m.event.delivery === watching) {
      event(m.event);
    }
  }

  // --- signals outside the page ------------------------------------------
  var version = null, waiting = null;
  function pulse(p) {
    var n = document.getElementById("waiting-n"), link = document.getElementById("nav-waiting");
    if (n && link) {
      n.textContent = p.waiting > 0 ? String(p.waiting) : "";
      link.hidden = !(p.waiting > 0);
    }
    document.title = (p.waiting > 0 ? "(" + p.waiting + ") " : "") + (body.dataset.title || document.title);
    if (waiting !== null && p.waiting > waiting) notify(p.waiting);
    waiting = p.waiting;
    if (version !== null && p.version !== version) {
      body.dispatchEvent(new CustomEvent("baton:pulse"));
    }
    version = p.version;
  }

  var notifyButton = document.getElementById("notify");
  if (notifyButton && window.Notification && Notification.permission === "default") {
    notifyButton.classList.remove("reserved");
    notifyButton.addEventListener("click", function () {
      Notification.requestPermission().then(function () { notifyButton.classList.add("reserved"); });
    });
  }
  function notify(n) {
    if (!window.Notification || Notification.permission !== "granted" || !document.hidden) return;
    // One tag for every tab: the newest replaces the others.
    var note = new Notification(n === 1 ? "A delivery waits for you" : n + " deliveries wait for you",
      { body: "baton: open the board to decide.", tag: "baton-waiting" });
    note.addEventListener("click", function () { window.focus(); location.href = "/board"; });
  }

  // --- times ---------------------------------------------------------------
  function span(ms) {
    var s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return s + "s";
    var m = Math.floor(s / 60);
    if (m < 60) return m + "m " + (s % 60) + "s";
    return Math.floor(m / 60) + "h " + (m % 60) + "m";
  }
  function ago(ms) {
    var m = Math.floor(ms / 60000);
    if (m < 1) return "just now";
    if (m < 60) return m + " min ago";
    if (m < 48 * 60) return Math.floor(m / 60) + " h ago";
    return null;
  }
  // set writes only a text that changed: every write costs the page a
  // new layout, and most relative times stay the same for a minute.
  function set(el, text) { if (text && el.textContent !== text) el.textContent = text; }
  function tick() {
    var now = Date.now();
    document.querySelectorAll("time[data-since]").forEach(function (t) {
      set(t, span(now - Date.parse(t.getAttribute("datetime"))));
    });
    document.querySelectorAll("time[data-ago]").forEach(function (t) {
      set(t, ago(now - Date.parse(t.getAttribute("datetime"))));
    });
  }
  tick();
  setInterval(tick, 1000);

  // --- a delivery's page ---------------------------------------------------
  var count = document.getElementById("log-count");
  var follow = document.getElementById("log-follow");
  var expand = document.getElementById("log-expand");
  function atEnd() { return log.scrollTop + log.clientHeight >= log.scrollHeight - 8; }
  function showFollow(on) { if (follow) follow.classList.toggle("reserved", !on); }
  function toEnd() { log.scrollTop = log.scrollHeight; showFollow(false); }
  if (log) {
    toEnd(); // opened mid-run: the newest lines, not the oldest
    log.addEventListener("scroll", function () { showFollow(!atEnd()); });
    if (follow) follow.addEventListener("click", toEnd);
    if (expand) {
      expand.classList.remove("reserved");
      expand.addEventListener("click", function () {
        var full = log.classList.toggle("full");
        expand.setAttribute("aria-expanded", String(full));
        expand.textContent = full ? "Collapse" : "Expand";
        if (full) log.scrollIntoView({ block: "start" });
      });
    }
  }

  function clock(iso) {
    var d = new Date(iso);
    return isNaN(d) ? "" : d.toISOString().slice(11, 19);
  }
  function line(e) {
    var div = document.createElement("div");
    div.className = "ev " + e.kind + (e.kind === "phase" && e.status ? " st-" + e.status : "");
    var t = document.createElement("time");
    t.setAttribute("datetime", e.at);
    t.textContent = clock(e.at);
    var s = document.createElement("span");
    s.className = "t";
    s.textContent = e.text;
    div.append(t, " ", s);
    return div;
  }
  function event(e) {
    var end = atEnd();
    var empty = document.getElementById("live-empty");
    if (empty) empty.remove();
    var last = log.lastElementChild;
    if (e.kind === "tool") {
      var group = last && last.matches("details.tools") ? last : null;
      if (!group) {
        group = document.createElement("details");
        group.className = "tools";
        var sum = document.createElement("summary");
        var t = document.createElement("time");
        t.setAttribute("datetime", e.at);
        t.textContent = clock(e.at);
        sum.append(t, " ", document.createElement("span"));
        group.appendChild(sum);
        log.appendChild(group);
      }
      group.appendChild(line(e));
      var n = group.querySelectorAll(".ev").length;
      group.querySelector("summary span").textContent = n + (n === 1 ? " tool call" : " tool calls");
    } else {
      log.appendChild(line(e));
    }
    log.dataset.after = String(e.seq);
    if (count) count.textContent = String(Number(count.textContent || 0) + 1);
    if (end) toEnd(); else showFollow(true);
    if (e.kind === "phase") refresh();
    if (e.run && e.run > Number(log.dataset.run || 0)) {
      log.dataset.run = String(e.run);
      refresh(); // a new agent run: its row
    }
    if (e.kind === "phase" && e.phase === "close") send({ type: "unwatch", id: watching });
  }

  // One refresh at a time, always of the elements on the page now:
  // phase changes come in bursts, and a refresh queued against an
  // element an earlier refresh replaced would land nowhere.
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.pathname + "?fragment=live", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (!r.ok) throw new Error("status " + r.status);
        return r.text();
      })
      .then(function (html) {
        var tpl = document.createElement("template");
        tpl.innerHTML = html.trim();
        ["state", "detail"].forEach(function (id) { swap(document.getElementById(id), tpl.content.getElementById(id)); });
        tick();
      })
      .then(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      }, function () {
        busy = again = false;
        setTimeout(refresh, 1000);
      });
  }

  // swap replaces cur with next keeping what the person was doing: open
  // disclosures, text being typed, the focus.
  function swap(cur, next) {
    if (!cur || !next) return;
    cur.querySelectorAll("details[id]").forEach(function (d) {
      var n = next.querySelector("#" + CSS.escape(d.id));
      if (n) n.open = d.open;
    });
    cur.querySelectorAll("textarea[id], select[id], input[id]").forEach(function (f) {
      var n = next.querySelector("#" + CSS.escape(f.id));
      if (n && f.value !== f.defaultValue) n.value = f.value;
    });
    var focused = document.activeElement && cur.contains(document.activeElement) ? document.activeElement.id : "";
    cur.replaceWith(next);
    if (focused) {
      var f = document.getElementById(focused);
      if (f) f.focus();
    }
  }

  // --- earlier log lines -----------------------------------------------------
  // "Show earlier lines" fetches them into the log, above the ones shown,
  // keeping what the person reads where it is; without JavaScript the
  // link opens the page with them.
  if (log) log.addEventListener("click", function (e) {
    var a = e.target.closest ? e.target.closest("#log-earlier a") : null;
    if (!a || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return;
    e.preventDefault();
    var u = new URL(a.href);
    u.hash = "";
    u.searchParams.set("fragment", "earlier");
    fetch(u, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (!r.ok) throw new Error("status " + r.status);
        return r.text();
      })
      .then(function (html) {
        var tpl = document.createElement("template");
        tpl.innerHTML = html.trim();
        var holder = document.getElementById("log-earlier");
        var height = log.scrollHeight;
        holder.replaceWith(tpl.content);
        log.scrollTop += log.scrollHeight - height;
        var next = document.querySelector("#log-earlier a");
        (next || log).focus({ preventScroll: true });
      })
      .catch(function () { location.href = a.href; });
  });

  // --- line notes ------------------------------------------------------------
  // Selecting a numbered line of the diff, or a block of the rendered plan
  // (its data-line: the source line it starts on), adds "path:line: "
  // to the reject form's notes, opened, for the person to go on typing.
  // In a block that spans source lines (data-end), the line is the one
  // under the pointer: the rendered text keeps the source's line breaks,
  // so the breaks before the clicked character count the lines down.
  // Without JavaScript the same notes are typed there by hand. The
  // lines look clickable once the pointer reaches them: a class on the
  // whole document at load would restyle every line of a big diff.
  document.addEventListener("pointerover", function (e) {
    var f = e.target.closest ? e.target.closest("[data-path]") : null;
    if (f && !f.classList.contains("notes-on")) f.classList.add("notes-on");
  });
  function lineAt(block, x, y) {
    var first = Number(block.dataset.line), last = Number(block.dataset.end || first);
    if (!(last > first)) return first;
    var node, offset;
    if (document.caretPositionFromPoint) {
      var p = document.caretPositionFromPoint(x, y);
      if (p) { node = p.offsetNode; offset = p.offset; }
    } else if (document.caretRangeFromPoint) {
      var r = document.caretRangeFromPoint(x, y);
      if (r) { node = r.startContainer; offset = r.startOffset; }
    }
    if (!node || node.nodeType !== 3 || !block.contains(node)) return first;
    var breaks = 0, walk = document.createTreeWalker(block, NodeFilter.SHOW_TEXT), t;
    while ((t = walk.nextNode())) {
      var text = t === node ? t.data.slice(0, offset) : t.data;
      for (var i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) breaks++;
      if (t === node) break;
    }
    return Math.min(last, first + breaks);
  }
  document.addEventListener("click", function (e) {
    if (!e.target.closest || e.target.closest("a")) return; // a plan's link is followed, not noted
    var l = e.target.closest("[data-line]");
    var f = l ? l.closest("[data-path]") : null;
    var notes = document.getElementById("notes-reject");
    if (!f || !notes || String(window.getSelection ? window.getSelection() : "") !== "") return;
    var box = document.getElementById("confirm-reject");
    if (box) box.open = true;
    var v = notes.value;
    notes.value = v + (v && v.slice(-1) !== "\n" ? "\n" : "") + f.dataset.path + ":" + lineAt(l, e.clientX, e.clientY) + ": ";
    notes.focus();
    notes.setSelectionRange(notes.value.length, notes.value.length);
  });

  // --- lists and boards ---------------------------------------------------
  // A part marked data-refresh (the list, the board) is fetched anew when
  // a delivery changes and every minute, and replaces itself in place.
  function reload(id) {
    var part = document.getElementById(id);
    if (!part || part.dataset.busy) return;
    part.dataset.busy = "1";
    fetch(part.dataset.refresh, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (!r.ok) throw new Error("status " + r.status);
        return r.text();
      })
      .then(function (html) {
        var next = new DOMParser().parseFromString(html, "text/html").getElementById(id);
        if (next) {
          swap(part, document.adoptNode(next));
          tick();
        }
      })
      .catch(function () { /* the next pulse or minute tries again */ })
      .then(function () { delete part.dataset.busy; });
  }
  document.querySelectorAll("[data-refresh][id]").forEach(function (part) {
    var id = part.id;
    body.addEventListener("baton:pulse", function () { reload(id); });
    setInterval(function () { reload(id); }, 60000);
  });

  function caughtUp() {
    // Back after the server was gone: whatever changed meanwhile.
    if (log) refresh();
    body.dispatchEvent(new CustomEvent("baton:pulse"));
  }

  connect();
})();
