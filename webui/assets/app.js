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
