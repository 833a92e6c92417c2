// One event stream per browser for all of the dashboard's pages.
//
// Browsers open at most six HTTP/1.1 connections per server, and an
// event stream holds one while its page is open: a stream per tab let
// six tabs stall a seventh page. This hub holds the browser's one
// stream (GET /live?watch=id:after,...) for every page connected to it
// and hands each page the events of the deliveries it watches. It runs
// in a SharedWorker, so all tabs share it; where a browser has no
// SharedWorker, a page runs its own hub (live.js closes it while the
// page is hidden, so only visible pages hold a connection).
//
// Messages from a page: {type: "hello"}, {type: "watch", id, after},
// {type: "unwatch", id}, {type: "bye"}. To a page: {type: "status",
// connected}, {type: "pulse", pulse}, {type: "event", event}.
(function (global) {
  "use strict";

  function Hub(url) {
    this.url = url;
    this.pages = [];
    this.es = null;
    this.key = null;
    this.connected = null;
    this.pulse = null;
    this.timer = null;
  }

  // add connects a page; post delivers messages to it.
  Hub.prototype.add = function (post) {
    var page = { post: post, watch: {} };
    this.pages.push(page);
    return page;
  };

  Hub.prototype.handle = function (page, m) {
    switch (m && m.type) {
      case "hello":
        if (this.connected !== null) page.post({ type: "status", connected: this.connected });
        if (this.pulse) page.post({ type: "pulse", pulse: this.pulse });
        this.schedule();
        return;
      case "watch":
        page.watch[m.id] = m.after;
        break;
      case "unwatch":
        delete page.watch[m.id];
        break;
      case "bye":
        this.pages = this.pages.filter(function (p) { return p !== page; });
        break;
      default:
        return;
    }
    this.schedule();
  };

  // schedule (re)connects soon: pages come and go in bursts.
  Hub.prototype.schedule = function (delay) {
    var hub = this;
    if (hub.timer) clearTimeout(hub.timer);
    hub.timer = setTimeout(function () { hub.timer = null; hub.connect(); }, delay || 30);
  };

  // want is every watched delivery with the oldest event any page
  // watching it has seen: the stream replays from there, and each page
  // skips what it already has.
  Hub.prototype.want = function () {
    var w = {};
    this.pages.forEach(function (p) {
      Object.keys(p.watch).forEach(function (id) {
        if (!(id in w) || p.watch[id] < w[id]) w[id] = p.watch[id];
      });
    });
    return Object.keys(w).sort().map(function (id) { return id + ":" + w[id]; }).join(",");
  };

  Hub.prototype.status = function (up) {
    if (this.connected === up) return;
    this.connected = up;
    this.pages.forEach(function (p) { p.post({ type: "status", connected: up }); });
  };

  Hub.prototype.connect = function () {
    var hub = this;
    if (hub.pages.length === 0) {
      if (hub.es) hub.es.close();
      hub.es = null;
      hub.key = null;
      return;
    }
    var key = hub.want();
    if (hub.es && key === hub.key) return;
    if (hub.es) hub.es.close();
    hub.key = key;
    var es = new EventSource(hub.url + (key ? "?watch=" + encodeURIComponent(key) : ""));
    hub.es = es;
    es.addEventListener("open", function () { if (hub.es === es) hub.status(true); });
    es.addEventListener("error", function () {
      // Reconnect with the pages' own positions, not the first URL's.
      if (hub.es !== es) return;
      es.close();
      hub.es = null;
      hub.key = null;
      hub.status(false);
      hub.schedule(2000);
    });
    es.addEventListener("pulse", function (m) {
      hub.pulse = JSON.parse(m.data);
      hub.pages.forEach(function (p) { p.post({ type: "pulse", pulse: hub.pulse }); });
    });
    ["phase", "text", "tool", "note"].forEach(function (kind) {
      es.addEventListener(kind, function (m) {
        var e = JSON.parse(m.data);
        e.kind = kind;
        hub.pages.forEach(function (p) {
          var seen = p.watch[e.delivery];
          if (seen === undefined || e.seq <= seen) return;
          p.watch[e.delivery] = e.seq;
          p.post({ type: "event", event: e });
        });
      });
    });
  };

  if (typeof SharedWorkerGlobalScope !== "undefined" && global instanceof SharedWorkerGlobalScope) {
    var hub = new Hub("/live");
    global.addEventListener("connect", function (c) {
      var port = c.ports[0];
      var page = hub.add(function (m) { port.postMessage(m); });
      port.addEventListener("message", function (m) { hub.handle(page, m.data); });
      port.start();
    });
  } else {
    global.BatonHub = Hub;
  }
})(self);
