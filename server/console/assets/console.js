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

  // A line chart of one field per series over the buckets' start times, drawn on a
  // canvas: a y axis from 0 to the largest value, times under the x axis, a legend.
  var palette = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563"];
  var drawChart = function (el, starts, series, field) {
    var width = Math.max(320, Math.min(el.clientWidth || 900, 1100)), height = 180;
    var ratio = window.devicePixelRatio || 1;
    var canvas = document.createElement("canvas");
    canvas.width = width * ratio;
    canvas.height = height * ratio;
    canvas.style.width = width + "px";
    canvas.style.height = height + "px";
    el.textContent = "";
    el.appendChild(canvas);
    var g = canvas.getContext("2d");
    g.scale(ratio, ratio);
    g.font = "11px system-ui, sans-serif";
    var left = 60, right = 10, top = 8, bottom = 36;
    var plotW = width - left - right, plotH = height - top - bottom;
    var max = 0;
    series.forEach(function (s) { (s[field] || []).forEach(function (v) { if (v > max) max = v; }); });
    if (max === 0) max = 1;
    var n = starts.length;
    var x = function (i) { return left + (n > 1 ? plotW * i / (n - 1) : plotW / 2); };
    var y = function (v) { return top + plotH - plotH * v / max; };
    g.strokeStyle = "#d1d5db";
    g.fillStyle = "#4b5563";
    g.textAlign = "right";
    g.textBaseline = "middle";
    for (var t = 0; t <= 4; t++) {
      var v = max * t / 4, yy = Math.round(y(v)) + 0.5;
      g.beginPath(); g.moveTo(left, yy); g.lineTo(left + plotW, yy); g.stroke();
      g.fillText(String(Math.round(v)), left - 6, yy);
    }
    g.textAlign = "center";
    g.textBaseline = "top";
    var step = Math.max(1, Math.ceil(n / 6));
    for (var i = 0; i < n; i += step) {
      var d = new Date(starts[i] * 1000);
      g.fillText(d.toLocaleString([], { month: "numeric", day: "numeric", hour: "2-digit", minute: "2-digit" }), x(i), top + plotH + 4);
    }
    var legendX = left;
    series.forEach(function (s, k) {
      var color = palette[k % palette.length], values = s[field] || [];
      g.strokeStyle = color;
      g.fillStyle = color;
      g.lineWidth = 2;
      g.beginPath();
      values.forEach(function (v, j) { if (j === 0) g.moveTo(x(j), y(v)); else g.lineTo(x(j), y(v)); });
      g.stroke();
      values.forEach(function (v, j) { g.beginPath(); g.arc(x(j), y(v), 2, 0, 2 * Math.PI); g.fill(); });
      g.textAlign = "left";
      g.fillRect(legendX, height - 12, 10, 3);
      g.fillText(s.label, legendX + 14, height - 17);
      legendX += 24 + g.measureText(s.label).width;
    });
  };

  var charts = document.getElementById("charts");
  if (charts) {
    fetch(charts.dataset.src, { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (d) {
        charts.querySelectorAll(".chart").forEach(function (el) {
          drawChart(el, d.starts || [], d.series || [], el.dataset.field);
        });
        charts.classList.add("drawn");
      });
  }
})();
