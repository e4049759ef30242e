// ragmeter view: live progress of a job over server-sent events.  Values are written with
// textContent only (never as HTML), so nothing from the server is ever parsed as markup.
(function () {
  "use strict";
  var box = document.getElementById("job");
  if (!box || !window.EventSource) { return; }
  var source = new EventSource(box.getAttribute("data-events"));
  var bar = document.getElementById("job-bar");
  function show(state) {
    box.querySelectorAll("[data-k]").forEach(function (el) {
      var v = state[el.getAttribute("data-k")];
      var empty = el.getAttribute("data-k") === "error" ? "" : "—";
      el.textContent = (v === null || v === undefined) ? empty : String(v);
    });
    if (bar) { bar.max = state.todo || 1; bar.value = state.done || 0; }
    if (state.run_id) {
      var link = document.getElementById("run-link");
      link.textContent = state.run_id;
      link.setAttribute("href", "/runs/" + encodeURIComponent(state.run_id));
      document.getElementById("job-result").hidden = false;
    }
    var terminal = ["done", "failed", "cancelled"].indexOf(state.status) >= 0;
    var cancel = document.getElementById("cancel-form");
    if (cancel && terminal) { cancel.hidden = true; }
    var badge = document.getElementById("running-badge");
    if (badge && terminal) { badge.hidden = true; }
    var resume = document.getElementById("resume-form");
    if (resume) { resume.hidden = !(state.status === "cancelled" || state.status === "failed"); }
  }
  var seen = 0;
  source.onmessage = function (event) {
    seen += 1;
    box.setAttribute("data-updates", String(seen));  // how many pushes arrived (tests read it)
    show(JSON.parse(event.data));
  };
  source.addEventListener("end", function () { source.close(); });
})();
