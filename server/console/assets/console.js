// hearth console: polls the live view and draws the usage charts. No inline script
// anywhere (the Content-Security-Policy forbids it); the server escapes all HTML.
"use strict";
(function () {
  var live = document.querySelector("[data-poll]");
  if (live) {
    var poll = function () {
      fetch(live.dataset.poll, { credentials: "same-origin" })
        .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
        .then(function (html) { live.innerHTML = html; live.classList.remove("stale"); })
        .catch(function () { live.classList.add("stale"); })
        .finally(function () { setTimeout(poll, 2000); });
    };
    setTimeout(poll, 2000);
  }

  var charts = document.getElementById("charts");
  if (charts && window.uPlot) {
    var palette = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563"];
    fetch(charts.dataset.src, { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (d) {
        charts.querySelectorAll(".chart").forEach(function (el) {
          var field = el.dataset.field;
          var series = [{}];
          var data = [d.starts];
          (d.series || []).forEach(function (s, i) {
            series.push({ label: s.label, stroke: palette[i % palette.length], width: 2, points: { show: true, size: 4 } });
            data.push(s[field]);
          });
          var width = Math.max(320, Math.min(el.clientWidth || 900, 1100));
          new uPlot({ width: width, height: 180, series: series, axes: [{}, { size: 60 }] }, data, el);
        });
        charts.classList.add("drawn");
      });
  }
})();
