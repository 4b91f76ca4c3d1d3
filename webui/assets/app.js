// Skein dashboard: appends output stream chunks as the run writes them.
// The pages work without it; it only saves reloading.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  if (!window.EventSource) return;
  document.querySelectorAll("pre[data-stream]").forEach(function (pre) {
    if (pre.dataset.done) return;
    var src = new EventSource(pre.dataset.stream);
    src.addEventListener("chunk", function (e) {
      var text = JSON.parse(e.data).text;
      // Text nodes only: stream text is never parsed as markup.
      pre.appendChild(document.createTextNode(text));
      pre.scrollTop = pre.scrollHeight;
    });
    src.addEventListener("end", function () {
      src.close();
      pre.dataset.done = "1";
      var live = pre.parentNode.querySelector(".live");
      if (live) { live.className = "dim"; live.textContent = "(closed)"; }
    });
  });
});

// A live run's page, and the runs list, follow the events (the live
// subscription): a run's status updates in place, and a note counts the
// events committed since the page was drawn, with a link to draw it again.
document.addEventListener("DOMContentLoaded", function () {
  var note = document.querySelector("[data-events]");
  if (!note || !window.EventSource) return;
  var statuses = { run_started: "running", run_completed: "completed", run_failed: "failed",
    run_cancelled: "cancelled", run_held: "held" };
  var classes = { running: "st-busy", completed: "st-ok", failed: "st-bad", cancelled: "st-dim", held: "st-bad" };
  var status = document.getElementById("run-status");
  var count = 0;
  var src = new EventSource(note.dataset.events);
  src.onmessage = function (e) {
    var ev = JSON.parse(e.data);
    var st = statuses[ev.eventType];
    if (st && status) {
      status.textContent = st;
      status.className = "status " + classes[st];
    }
    count++;
    note.hidden = false;
    note.textContent = "";
    note.appendChild(document.createTextNode(count + (count === 1 ? " new event" : " new events") +
      " since this page was drawn (the last: " + ev.eventType + "). "));
    var a = document.createElement("a");
    a.href = note.dataset.reload || location.pathname;
    a.textContent = "Show them";
    note.appendChild(a);
  };
  src.addEventListener("end", function () { src.close(); });
  src.addEventListener("error", function (e) { if (e.data) src.close(); });
});
