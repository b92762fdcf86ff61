// maitred console: two small aids, nothing the pages need to work.
// "/" moves to the first filter field; the "Live" box reloads the first page of decisions
// when its JSON twin shows a newer decision (every 5 s, while the box is ticked).
(function () {
  "use strict";
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    var typing = target && (target.tagName === "INPUT" || target.tagName === "SELECT" || target.tagName === "TEXTAREA");
    if (event.key === "/" && !typing) {
      var first = document.querySelector("main form input, main form select");
      if (first) { event.preventDefault(); first.focus(); }
    }
  });
  var live = document.getElementById("live");
  if (!live) { return; }
  var key = "maitred-console-live";
  live.checked = window.sessionStorage.getItem(key) === "1";
  var firstRow = document.querySelector("table.decisions tbody tr td:nth-child(3) a");
  var newest = firstRow ? firstRow.textContent : "";
  function poll() {
    if (!live.checked) { return; }
    fetch(window.location.href, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data || !live.checked) { return; }
        var top = data.decisions.length ? data.decisions[0].decision_id : "";
        if (top !== newest) { window.location.reload(); }
      })
      .catch(function () { /* the next tick tries again */ });
  }
  live.addEventListener("change", function () {
    window.sessionStorage.setItem(key, live.checked ? "1" : "0");
  });
  window.setInterval(poll, 5000);
})();
