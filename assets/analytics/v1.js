/* plinth analytics v1: cookie-less page and event tracking.
 * <script src="{base_url}/analytics/v1.js" data-site-id="SITE" defer></script>
 * Optional: data-client-id="<uuid>" (else the server counts one visitor per day from
 * address and user agent), data-auto-track="false" (no automatic page views).
 * Sends no cookies, reads and writes no storage, and ignores network failures.
 * API: window.viewsPage.track(label, data?) (alias window.analyticsPage). */
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script || window.viewsPage) return;
  var siteId = script.getAttribute("data-site-id");
  if (!siteId) return;
  var clientId = script.getAttribute("data-client-id");
  var endpoint = new URL("/api/analytics/track", script.src).href;

  function send(label, data) {
    var body = { site_id: siteId, label: String(label) };
    if (clientId) body.client_id = clientId;
    if (data !== undefined) body.data = data;
    try {
      fetch(endpoint, {
        method: "POST",
        mode: "cors",
        credentials: "omit",
        keepalive: true,
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body)
      }).catch(function () {});
    } catch (e) {
      /* a blocked or failed request never breaks the page */
    }
  }

  var api = {
    track: function (label, data) {
      send(label, data);
    }
  };
  window.viewsPage = api;
  window.analyticsPage = api;
  if (script.getAttribute("data-auto-track") === "false") return;

  var last = null;
  function pageView() {
    var path = location.pathname;
    if (path === last) return; /* a replaceState of the same path is not a new view */
    last = path;
    send(path);
  }
  ["pushState", "replaceState"].forEach(function (name) {
    var original = history[name];
    history[name] = function () {
      var result = original.apply(this, arguments);
      pageView();
      return result;
    };
  });
  window.addEventListener("popstate", pageView);
  pageView();
})();
