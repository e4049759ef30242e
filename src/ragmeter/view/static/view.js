// ragmeter view: live progress of a job over server-sent events.  Values are written with
// textContent only (never as HTML), so nothing from the server is ever parsed as markup.
function ragmeterBadge(state) {  // the header's "N running, M queued" (every page has it)
  "use strict";
  var badge = document.getElementById("running-badge");
  if (!badge || typeof state.running !== "number") { return; }
  badge.hidden = !(state.running || state.queued);
  badge.textContent = state.running + " running" + (state.queued ? ", " + state.queued + " queued" : "");
}
(function () {
  "use strict";
  var box = document.getElementById("job");
  if (!box || !window.EventSource) { return; }
  var source = new EventSource(box.getAttribute("data-events"));
  var bar = document.getElementById("job-bar");
  function show(state) {
    box.querySelectorAll("[data-k]").forEach(function (el) {
      var v = state[el.getAttribute("data-k")];
      if (el.getAttribute("data-k") === "cost_usd" && typeof v === "number") { v = v.toFixed(4); }
      var empty = el.getAttribute("data-k") === "error" ? "" : "—";
      el.textContent = (v === null || v === undefined) ? empty : String(v);
    });
    if (bar) { bar.max = state.todo || 1; bar.value = state.done || 0; }
    ragmeterBadge(state);
    if (state.run_id) {
      var link = document.getElementById("run-link");
      link.textContent = state.run_id;
      link.setAttribute("href", "/runs/" + encodeURIComponent(state.run_id));
      document.getElementById("job-result").hidden = false;
    }
    var terminal = ["done", "failed", "cancelled"].indexOf(state.status) >= 0;
    var cancel = document.getElementById("cancel-form");
    if (cancel && terminal) { cancel.hidden = true; }
    var queued = document.getElementById("queue-position");
    if (queued && state.status !== "queued") { queued.hidden = true; }
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
// The job list: every job's counters over one stream; the page reloads itself when a job
// appears, starts or ends (its buttons change), and never writes server text as markup.
(function () {
  "use strict";
  var table = document.getElementById("jobs");
  if (!table || !window.EventSource) { return; }
  var source = new EventSource(table.getAttribute("data-events"));
  var seen = 0;
  source.onmessage = function (event) {
    var data = JSON.parse(event.data);
    ragmeterBadge(data);
    var rows = table.querySelectorAll("tr[data-job]");
    if (rows.length !== data.jobs.length) { source.close(); window.location.reload(); return; }
    seen += 1;
    table.setAttribute("data-updates", String(seen));
    data.jobs.forEach(function (j) {
      var row = table.querySelector('tr[data-job="' + j.id.replace(/[^0-9a-f]/g, "") + '"]');
      if (!row) { return; }
      var active = ["queued", "starting", "running"].indexOf(j.status) >= 0 ? "1" : "0";
      if (row.getAttribute("data-active") !== active) {
        source.close(); window.location.reload(); return;
      }
      row.querySelectorAll("[data-k]").forEach(function (el) {
        var k = el.getAttribute("data-k");
        var v = j[k];
        if (k === "status") { v = j.status + (j.position ? " #" + j.position : ""); }
        if (k === "completion_tokens") { v = j.prompt_tokens + j.completion_tokens; }
        if (k === "run_id") { return; }
        el.textContent = (v === null || v === undefined) ? "—" : String(v);
      });
    });
  };
})();
(function () {  // the model dropdown shows the chosen endpoint's models only
  "use strict";
  var backend = document.getElementById("backend");
  var model = document.getElementById("model");
  if (!backend || !model) { return; }
  function sync() {
    model.querySelectorAll("optgroup").forEach(function (group) {
      var mine = group.getAttribute("data-backend") === backend.value;
      group.hidden = !mine;
      group.disabled = !mine;
    });
    var chosen = model.options[model.selectedIndex];
    if (chosen && chosen.parentElement && chosen.parentElement.disabled) { model.value = ""; }
  }
  backend.addEventListener("change", sync);
  sync();
})();
