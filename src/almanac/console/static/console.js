// Live updates from the catalog's event stream (/v1/events, Server-Sent Events).
// A page showing the latest version swaps in its fresh content when a new
// version arrives; a page pinned to a version (?version=N) keeps what it shows
// and offers the newer version instead, so nothing moves under the reader.
"use strict";
(function () {
  // Every instant is written in UTC; add the reader's own clock beside it.
  function localTimes(root) {
    for (const time of root.querySelectorAll("time[datetime]")) {
      if (time.nextElementSibling && time.nextElementSibling.classList.contains("local")) continue;
      const moment = new Date(time.getAttribute("datetime"));
      if (isNaN(moment.getTime())) continue;
      const local = document.createElement("span");
      local.className = "local";
      local.textContent = moment.toLocaleString(undefined, {
        year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit",
        second: "2-digit", timeZoneName: "short",
      });
      local.title = "your local time";
      time.after(local);
    }
  }
  localTimes(document);

  const body = document.body;
  if (!body.dataset.latest || typeof EventSource === "undefined") return;
  let latest = Number(body.dataset.latest);
  let shown = latest;
  let busy = false;
  let again = false;

  function offer(text, href) {
    document.getElementById("live-text").textContent = text;
    document.getElementById("live-link").setAttribute("href", href);
    document.getElementById("live").hidden = false;
  }

  function latestUrl() {
    const url = new URL(window.location.href);
    url.searchParams.delete("version");
    return url.pathname + url.search;
  }

  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    try {
      const response = await fetch(window.location.href, {
        credentials: "same-origin", headers: { "Accept": "text/html" }, cache: "no-store",
      });
      if (response.redirected) {  // to the login form: the token no longer opens pages
        offer("Version " + latest + " is available; log in again to see it.", "/login");
        return;
      }
      if (!response.ok) {
        offer("Version " + latest + " is available; this page cannot show it (" + response.status + ").", "/");
        return;
      }
      const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
      for (const id of ["top", "content", "status"]) {
        const now = document.getElementById(id);
        const next = fresh.getElementById(id);
        if (now && next) now.replaceWith(document.adoptNode(next));
      }
      localTimes(document);
      shown = Number(fresh.body.dataset.version || latest);
      body.dataset.version = String(shown);
      body.dataset.latest = fresh.body.dataset.latest || String(latest);
    } catch (err) {
      offer("Version " + latest + " is available.", window.location.href);
    } finally {
      busy = false;
      if (again) { again = false; refresh(); }
    }
  }

  function arrived(version) {
    if (!(version > latest)) return;
    latest = version;
    // The footer and the picker name the newest version, even on a pinned page.
    for (const node of document.querySelectorAll(".latest-number")) {
      node.textContent = String(version);
    }
    const picker = document.getElementById("version");
    if (picker) picker.max = String(version);
    if (body.dataset.pinned === "true") {
      offer("Version " + version + " is available.", latestUrl());
    } else {
      refresh();
    }
  }

  const events = new EventSource("/v1/events?after=" + latest);
  events.onmessage = function (event) {
    try {
      arrived(Number(JSON.parse(event.data).version));
    } catch (err) {
      arrived(Number(event.lastEventId));
    }
  };
  // Leaving the page ends its stream at once: a stream left to the browser
  // would hold one of the few connections it opens to a server.
  window.addEventListener("pagehide", function () { events.close(); });
  events.addEventListener("error", function (event) {
    // A server-sent "error" event (its data says why) ends the stream: the
    // versions after ours were truncated, so only a reload can catch up.
    if (event.data) {
      events.close();
      offer("Live updates stopped: this page is too far behind the catalog.", latestUrl());
    }
  });
})();
