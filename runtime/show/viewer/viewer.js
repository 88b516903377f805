/* telamalloc plan viewer (runtime/show/html.py inlines this file into each page).
 *
 * Reads the JSON of the script element "tela-data" and draws each plan on canvases by hand:
 * rectangles are batched by colour into one path each, culled to the view, and given at
 * least one pixel (level of detail), so 10^5 buffers redraw in milliseconds. Tests and the
 * benchmark read `window.telaViewer` and the canvases' data-* attributes (data-drawn,
 * data-plot, data-view).
 */
(function () {
  "use strict";

  var PALETTE = ["#fbb4ae", "#b3cde3", "#ccebc5", "#decbe4", "#fed9a6", "#ffffcc", "#e5d8bd", "#fddaec",
    "#8dd3c7", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5", "#bc80bd"];
  var UNITS = { B: 1, KiB: 1024, MiB: 1048576, GiB: 1073741824 };
  var MARGIN = { left: 78, right: 14, top: 22, bottom: 24 };
  var MAX_LABELS = 300;
  var MAX_EDGES = 20000;
  var unit = "auto";

  var data = JSON.parse(document.getElementById("tela-data").textContent);
  var app = document.getElementById("tela-app");
  var tooltip = el("div", "tela-tooltip");
  tooltip.hidden = true;

  function num(value) { return typeof value === "string" ? Number(value) : value; }
  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function trimNumber(x) {
    var a = Math.abs(x);
    var s = x.toFixed(a >= 100 ? 1 : a >= 10 ? 2 : 3);
    return s.indexOf(".") >= 0 ? s.replace(/0+$/, "").replace(/\.$/, "") : s;
  }
  function unitFor(value) {
    if (unit !== "auto") return unit;
    var a = Math.abs(value);
    return a >= UNITS.GiB ? "GiB" : a >= UNITS.MiB ? "MiB" : a >= UNITS.KiB ? "KiB" : "B";
  }
  /* A byte count in the chosen unit ("auto": the largest that keeps it >= 1). */
  function bytes(value, forcedUnit) {
    var u = forcedUnit || unitFor(value);
    if (u === "B") return Math.round(value) + " B";
    return trimNumber(value / UNITS[u]) + " " + u;
  }
  /* An exact byte count from the data (a number, or a string beyond 2^53). */
  function exactBytes(raw) {
    var value = num(raw);
    var shown = bytes(value);
    var exact = String(raw) + " B";
    return shown === exact ? exact : shown + " (" + exact + ")";
  }
  /* A label just above a horizontal line at y, or just below it near the plot's top. */
  function lineLabel(ctx, text, x, y, plot) {
    var above = y - 15 >= plot.top;
    ctx.textBaseline = above ? "bottom" : "top";
    ctx.fillText(text, x, above ? y - 2 : y + 2);
  }
  function percent(x) { return (100 * x).toFixed(2) + "%"; }
  function niceStep(span, count) {
    var raw = span / count;
    var power = Math.pow(10, Math.floor(Math.log10(raw)));
    var f = raw / power;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * power;
  }

  // ------------------------------------------------------------------------------------
  // One plan: its data, its view and its canvases.

  function Plan(plan, index) {
    var self = this;
    this.index = index;
    this.plan = plan;
    var b = plan.buffers;
    var n = b.id.length;
    this.n = n;
    this.ids = b.id;
    this.start = Float64Array.from(b.start, num);
    this.end = Float64Array.from(b.end, num);
    this.size = Float64Array.from(b.size, num);
    this.capacity = plan.capacity === null ? null : num(plan.capacity);
    this.report = plan.report;
    this.explanation = plan.explanation;
    this.layouts = plan.layouts.map(function (layout) {
      return { label: layout.label, raw: layout.offsets, off: Float64Array.from(layout.offsets, num), peak: num(layout.peak), sketch: false };
    });
    this.explainSet = new Uint8Array(n);
    if (this.explanation) {
      this.explanation.buffers.forEach(function (i) { self.explainSet[i] = 1; });
      if (this.layouts.length === 0 && this.explanation.sketch) {
        var off = new Float64Array(n).fill(NaN), raw = new Array(n).fill(null), peak = 0;
        this.explanation.buffers.forEach(function (i, k) {
          off[i] = num(self.explanation.sketch[k]);
          raw[i] = self.explanation.sketch[k];
          if (self.size[i] > 0) peak = Math.max(peak, off[i] + self.size[i]);
        });
        var label = this.explanation.kind === "overload" ? "no layout: the buffers live at the overloaded point, stacked"
          : "no layout: the core, placed by best-fit";
        this.layouts.push({ label: label, raw: raw, off: off, peak: peak, sketch: true });
      }
    }
    this.colour = new Uint8Array(n);
    this.buckets = PALETTE.map(function () { return []; });
    for (var i = 0; i < n; i++) { this.colour[i] = i % PALETTE.length; this.buckets[i % PALETTE.length].push(i); }
    var tMin = Infinity, tMax = -Infinity;
    for (i = 0; i < n; i++) { if (this.start[i] < tMin) tMin = this.start[i]; if (this.end[i] > tMax) tMax = this.end[i]; }
    if (!(tMin < tMax)) { tMin = 0; tMax = 1; }
    this.tMin = tMin; this.tMax = tMax;
    this.loadTime = Float64Array.from(plan.load.time, num);
    this.loadLive = Float64Array.from(plan.load.live, num);
    var top = num(this.report.load) || 0;
    if (this.capacity !== null) top = Math.max(top, this.capacity);
    this.layouts.forEach(function (layout) { top = Math.max(top, layout.peak); });
    if (this.explanation && this.explanation.kind === "overload") top = Math.max(top, num(this.explanation.bytes));
    this.aTop = Math.max(top, 1) * 1.05;
    this.mode = "side";
    this.selected = -1;
    this.neighbours = [];
    this.neighbourSet = new Uint8Array(n);
    this.idIndex = null;
    this.resetView();
    this.build();
  }

  Plan.prototype.resetView = function () {
    this.view = { t0: this.tMin, t1: this.tMax, a0: 0, a1: this.aTop };
  };

  Plan.prototype.build = function () {
    var self = this;
    var root = this.root = el("section", "tela-plan");
    root.dataset.plan = String(this.index);
    root.appendChild(this.buildSummary());
    var main = el("div", "tela-main");
    var toolbar = el("div", "tela-toolbar");
    var form = el("form", "tela-search");
    var input = this.searchInput = el("input");
    input.type = "search";
    input.placeholder = "find a buffer by id";
    input.setAttribute("aria-label", "buffer id");
    var button = el("button", null, "find");
    button.type = "submit";
    form.appendChild(input);
    form.appendChild(button);
    form.addEventListener("submit", function (event) { event.preventDefault(); self.search(input.value); });
    toolbar.appendChild(form);
    this.searchStatus = el("span", "tela-search-status");
    toolbar.appendChild(this.searchStatus);
    var unitSelect = el("select", "tela-unit");
    unitSelect.setAttribute("aria-label", "units");
    ["auto", "B", "KiB", "MiB", "GiB"].forEach(function (u) {
      var option = el("option", null, u === "auto" ? "units: auto" : "units: " + u);
      option.value = u;
      unitSelect.appendChild(option);
    });
    unitSelect.addEventListener("change", function () { unit = unitSelect.value; viewer.refresh(); });
    toolbar.appendChild(unitSelect);
    if (this.layouts.length > 1) {
      var modeSelect = el("select", "tela-compare-mode");
      modeSelect.setAttribute("aria-label", "comparison");
      [["side", "side by side"], ["overlay", "overlaid"]].forEach(function (pair) {
        var option = el("option", null, pair[1]);
        option.value = pair[0];
        modeSelect.appendChild(option);
      });
      modeSelect.addEventListener("change", function () { self.mode = modeSelect.value; self.buildCanvases(); self.draw(); });
      toolbar.appendChild(modeSelect);
    }
    var reset = el("button", "tela-reset", "reset view");
    reset.type = "button";
    reset.addEventListener("click", function () { self.resetView(); self.draw(); });
    toolbar.appendChild(reset);
    toolbar.appendChild(el("span", "tela-hint", "wheel: zoom (shift: time only, alt: address only) · drag: pan · click: highlight · Esc: clear · 0: reset"));
    main.appendChild(toolbar);
    this.charts = el("div", "tela-charts");
    main.appendChild(this.charts);
    this.details = el("div", "tela-details");
    main.appendChild(this.details);
    root.appendChild(main);
    this.buildCanvases();
  };

  Plan.prototype.buildSummary = function () {
    var r = this.report;
    var aside = el("aside", "tela-summary");
    aside.appendChild(el("h2", null, this.plan.name));
    var table = el("table");
    function row(key, value, className) {
      var tr = el("tr");
      tr.appendChild(el("th", null, key));
      var td = el("td", className, value);
      tr.appendChild(td);
      table.appendChild(tr);
      return td;
    }
    if (r.status !== null) {
      row("status", r.status + (r.fallback ? " (greedy fallback)" : ""), "tela-status tela-status-" + r.status);
      row("mode", r.mode);
      row("solver", r.algorithm);
      if (r.mode === "minimize") row("optimal", r.optimal ? "proved" : "not proved");
    } else {
      row("status", "not solved (LOAD only)");
    }
    row("buffers", String(r.buffers));
    row("capacity", r.capacity === null ? "none" : exactBytes(r.capacity));
    row("LOAD", exactBytes(r.load));
    var self = this;
    if (!this.layouts.length || this.layouts[0].sketch) row("peak", "- (no layout)");
    this.layouts.forEach(function (layout, k) {
      if (layout.sketch) return;
      var td = row(k === 0 ? "peak" : "peak (" + layout.label + ")", exactBytes(layout.peak));
      td.className = "tela-peak";
      td.dataset.peak = String(layout.peak);
    });
    if (this.layouts.length > 1 && !this.layouts[0].sketch) {
      var base = this.layouts[0];
      for (var k = 1; k < this.layouts.length; k++) {
        var other = this.layouts[k];
        var diff = other.peak - base.peak;
        var text = (diff > 0 ? "+" : diff < 0 ? "\u2212" : "\u00b1") + bytes(Math.abs(diff)) +
          (base.peak > 0 ? " (" + (diff >= 0 ? "+" : "\u2212") + percent(Math.abs(diff) / base.peak) + ")" : "");
        var td = row(other.label + " \u2212 " + base.label, text + ": " + (diff > 0 ? base.label + " is smaller" : diff < 0 ? other.label + " is smaller" : "same peak"));
        td.className = "tela-peak-diff";
        td.dataset.peakDiff = String(diff);
      }
    }
    if (r.status !== null) {
      row("fragmentation", r.fragmentation === null ? "-" : percent(r.fragmentation));
      if (r.lower_bound !== undefined && r.lower_bound !== null) {
        var gap = r.peak === null || !num(r.lower_bound) ? "" : ", gap " + percent((num(r.peak) - num(r.lower_bound)) / num(r.lower_bound));
        row("lower bound", exactBytes(r.lower_bound) + gap + " (" + r.bound_proof + ")");
      }
      if (r.seconds !== undefined) row("solve time", r.seconds.toFixed(3) + " s");
      row("search", r.nodes + " nodes, " + r.backtracks + " backtracks, " + r.restarts + " restarts" + (r.cancelled ? ", cancelled" : ""));
    }
    aside.appendChild(table);
    if (r.contended) {
      var box = el("div", "tela-contended");
      box.appendChild(el("h3", null, "most contended point"));
      box.appendChild(el("div", null, "time " + r.contended.time + ": " + exactBytes(r.contended.bytes) + " live in " + r.contended.buffers.length + " buffers"));
      box.appendChild(this.idList(r.contended.buffers));
      aside.appendChild(box);
    }
    var e = this.explanation;
    if (e) {
      var why = el("div", "tela-explanation");
      why.appendChild(el("h3", null, e.kind === "overload" ? "why infeasible: an overloaded point" : "why infeasible: a core"));
      if (e.kind === "overload") {
        why.appendChild(el("div", null, "at time " + e.time + " the live buffers need " + exactBytes(e.bytes) + " but the capacity is " + exactBytes(e.capacity) + "; live there:"));
      } else {
        why.appendChild(el("div", null, "these " + e.buffers.length + " buffers cannot share the capacity" + (this.capacity === null ? "" : " of " + exactBytes(this.capacity)) + " although LOAD fits:"));
      }
      why.appendChild(this.idList(e.buffers));
      why.appendChild(el("div", "tela-hint", "drawn on the chart with red outlines"));
      aside.appendChild(why);
    }
    if (r.message) {
      var message = el("div", "tela-hint", r.message);
      message.style.marginTop = "6px";
      aside.appendChild(message);
    }
    return aside;
  };

  Plan.prototype.idList = function (indices) {
    var self = this;
    var box = el("div", "tela-ids");
    var shown = indices.slice(0, 40);
    shown.forEach(function (i, k) {
      var link = el("a", null, self.ids[i]);
      link.href = "#";
      link.addEventListener("click", function (event) { event.preventDefault(); self.select(i); self.zoomTo(i); });
      box.appendChild(link);
      if (k < shown.length - 1) box.appendChild(document.createTextNode(" "));
    });
    if (indices.length > shown.length) box.appendChild(document.createTextNode(" \u2026 and " + (indices.length - shown.length) + " more"));
    return box;
  };

  Plan.prototype.buildCanvases = function () {
    var self = this;
    this.charts.textContent = "";
    this.panels = [];
    var groups = this.layouts.length === 0 ? [[]] : this.mode === "overlay" ? [this.layouts.map(function (_, k) { return k; })]
      : this.layouts.map(function (_, k) { return [k]; });
    var height = groups.length > 1 ? 300 : 420;
    groups.forEach(function (group) {
      var canvas = el("canvas", "tela-layout");
      canvas.style.height = height + "px";
      canvas.dataset.layout = group.length ? self.layouts[group[0]].label : "none";
      self.charts.appendChild(canvas);
      var panel = { canvas: canvas, layouts: group, kind: "layout" };
      self.panels.push(panel);
      self.attach(panel);
    });
    var load = el("canvas", "tela-load");
    load.style.height = "150px";
    this.charts.appendChild(load);
    this.loadPanel = { canvas: load, layouts: [], kind: "load" };
    this.panels.push(this.loadPanel);
    this.attach(this.loadPanel);
  };

  // ------------------------------------------------------------------------------------
  // Drawing

  Plan.prototype.draw = function () {
    var self = this;
    if (this.root.hidden) return;
    this.panels.forEach(function (panel) { panel.kind === "load" ? self.drawLoad(panel) : self.drawLayout(panel); });
  };

  function prepare(panel) {
    var canvas = panel.canvas;
    var ratio = window.devicePixelRatio || 1;
    var width = canvas.clientWidth, height = canvas.clientHeight;
    if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
    }
    var ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    var plot = { left: MARGIN.left, top: MARGIN.top, width: Math.max(10, width - MARGIN.left - MARGIN.right), height: Math.max(10, height - MARGIN.top - MARGIN.bottom) };
    canvas.dataset.plot = [plot.left, plot.top, plot.width, plot.height].join(" ");
    panel.plot = plot;
    return ctx;
  }

  Plan.prototype.drawLayout = function (panel) {
    var ctx = prepare(panel);
    var plot = panel.plot, v = this.view;
    panel.canvas.dataset.view = [v.t0, v.t1, v.a0, v.a1].join(" ");
    var sx = plot.width / (v.t1 - v.t0), sy = plot.height / (v.a1 - v.a0);
    var left = plot.left, bottom = plot.top + plot.height, right = left + plot.width;
    var start = this.start, end = this.end, size = this.size;
    var self = this;
    var drawn = 0;
    ctx.save();
    ctx.beginPath();
    ctx.rect(plot.left, plot.top, plot.width, plot.height);
    ctx.clip();
    this.drawBands(ctx, plot, sx, false);
    function box(i, off) {
      var o = off[i];
      if (o !== o || size[i] <= 0) return null;
      if (end[i] <= v.t0 || start[i] >= v.t1 || o + size[i] <= v.a0 || o >= v.a1) return null;
      var x0 = left + (Math.max(start[i], v.t0) - v.t0) * sx, x1 = left + (Math.min(end[i], v.t1) - v.t0) * sx;
      var y0 = bottom - (Math.min(o + size[i], v.a1) - v.a0) * sy, y1 = bottom - (Math.max(o, v.a0) - v.a0) * sy;
      var w = Math.max(x1 - x0, 1), h = Math.max(y1 - y0, 1); // level of detail: never below a pixel
      return [x0, y0, w, h];
    }
    var labels = [], edges = [];
    panel.layouts.forEach(function (k, position) {
      var layout = self.layouts[k];
      var off = layout.off;
      if (position === 0) {
        self.buckets.forEach(function (bucket, colour) {
          ctx.beginPath();
          for (var j = 0; j < bucket.length; j++) {
            var i = bucket[j], r = box(i, off);
            if (r === null) continue;
            ctx.rect(r[0], r[1], r[2], r[3]);
            drawn++;
            if (r[2] >= 5 && r[3] >= 5 && edges.length < MAX_EDGES) edges.push(r);
            if (r[2] >= 7 * self.ids[i].length + 6 && r[3] >= 13) labels.push([r[2] * r[3], i, r]);
          }
          ctx.fillStyle = PALETTE[colour];
          ctx.fill();
        });
        ctx.beginPath();
        edges.forEach(function (r) { ctx.rect(r[0] + 0.25, r[1] + 0.25, r[2] - 0.5, r[3] - 0.5); });
        ctx.strokeStyle = "rgba(51,51,51,0.75)";
        ctx.lineWidth = 0.5;
        ctx.stroke();
      } else { // overlaid: the other layout as outlines
        ctx.beginPath();
        for (var i = 0; i < self.n; i++) {
          var r = box(i, off);
          if (r !== null) ctx.rect(r[0], r[1], r[2], r[3]);
        }
        ctx.strokeStyle = position === 1 ? "rgba(106,27,154,0.9)" : "rgba(0,105,92,0.9)";
        ctx.lineWidth = 1.2;
        ctx.stroke();
      }
    });
    var primary = panel.layouts.length ? this.layouts[panel.layouts[0]].off : null;
    if (primary !== null) {
      if (this.selected >= 0) {
        ctx.fillStyle = "rgba(255,255,255,0.72)";
        ctx.fillRect(plot.left, plot.top, plot.width, plot.height);
        this.neighbours.forEach(function (i) {
          var r = box(i, primary);
          if (r === null) return;
          ctx.fillStyle = PALETTE[self.colour[i]];
          ctx.fillRect(r[0], r[1], r[2], r[3]);
          ctx.strokeStyle = "#455a64";
          ctx.lineWidth = 1;
          ctx.strokeRect(r[0] + 0.5, r[1] + 0.5, Math.max(r[2] - 1, 0), Math.max(r[3] - 1, 0));
        });
      }
      if (this.explanation) {
        ctx.beginPath();
        this.explanation.buffers.forEach(function (i) {
          var r = box(i, primary);
          if (r !== null) ctx.rect(r[0] + 0.75, r[1] + 0.75, Math.max(r[2] - 1.5, 0), Math.max(r[3] - 1.5, 0));
        });
        ctx.strokeStyle = "#c62828";
        ctx.lineWidth = 1.5;
        ctx.stroke();
      }
      if (this.selected >= 0) {
        var r = box(this.selected, primary);
        if (r !== null) {
          ctx.fillStyle = PALETTE[this.colour[this.selected]];
          ctx.fillRect(r[0], r[1], r[2], r[3]);
          ctx.strokeStyle = "#d81b60";
          ctx.lineWidth = 2.5;
          ctx.strokeRect(r[0] + 1, r[1] + 1, Math.max(r[2] - 2, 0), Math.max(r[3] - 2, 0));
        }
      }
      labels.sort(function (a, b) { return b[0] - a[0] || a[1] - b[1]; });
      ctx.fillStyle = "#1f2933";
      ctx.font = "11px system-ui, sans-serif";
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      labels.slice(0, MAX_LABELS).forEach(function (item) {
        var r = item[2];
        ctx.fillText(self.ids[item[1]], r[0] + r[2] / 2, r[1] + r[3] / 2);
      });
    } else {
      ctx.fillStyle = "#8a939c";
      ctx.font = "14px system-ui, sans-serif";
      ctx.textAlign = "center";
      ctx.fillText("no layout", plot.left + plot.width / 2, plot.top + plot.height / 2);
    }
    this.drawBands(ctx, plot, sx, true);
    // capacity and peak lines
    var yOf = function (a) { return bottom - (a - v.a0) * sy; };
    ctx.textAlign = "right";
    ctx.textBaseline = "bottom";
    ctx.font = "11px system-ui, sans-serif";
    var lines = [];
    if (this.capacity !== null) {
      lines.push("capacity");
      var y = yOf(this.capacity);
      ctx.setLineDash([6, 4]);
      ctx.strokeStyle = "#c62828";
      ctx.lineWidth = 1.5;
      ctx.beginPath(); ctx.moveTo(left, y); ctx.lineTo(right, y); ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = "#c62828";
      lineLabel(ctx, "capacity " + bytes(this.capacity), right - 4, y, plot);
    }
    panel.layouts.forEach(function (k, position) {
      var layout = self.layouts[k];
      lines.push("peak");
      var y = yOf(layout.peak);
      ctx.setLineDash([2, 3]);
      ctx.strokeStyle = position === 0 ? "#1565c0" : position === 1 ? "#6a1b9a" : "#00695c";
      ctx.lineWidth = 1.5;
      ctx.beginPath(); ctx.moveTo(left, y); ctx.lineTo(right, y); ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = ctx.strokeStyle;
      ctx.textAlign = "left";
      lineLabel(ctx, (layout.sketch ? "these buffers need " : "peak ") + bytes(layout.peak) + (panel.layouts.length > 1 ? " (" + layout.label + ")" : ""), left + 4 + 190 * position, y, plot);
    });
    ctx.restore();
    panel.canvas.dataset.drawn = String(drawn);
    panel.canvas.dataset.lines = lines.join(" "); // the horizontal lines drawn: capacity, peak
    this.drawAxes(ctx, plot, true);
    ctx.fillStyle = "#1f2933";
    ctx.font = "12px system-ui, sans-serif";
    ctx.textAlign = "left";
    ctx.textBaseline = "alphabetic";
    var title = panel.layouts.length === 0 ? "layout" : panel.layouts.map(function (k) { return self.layouts[k].label; }).join(" vs ");
    ctx.fillText(title, plot.left, 15);
  };

  /* The most contended point (orange) and an overloaded point (red), as time bands. */
  Plan.prototype.drawBands = function (ctx, plot, sx, labelled) { // labelled: the labels only
    var v = this.view, left = plot.left;
    var bands = [];
    if (this.report.contended) bands.push([num(this.report.contended.time), "rgba(239,108,0,0.16)", "#ef6c00", "most contended: t=" + this.report.contended.time]);
    if (this.explanation && this.explanation.kind === "overload") bands.push([num(this.explanation.time), "rgba(198,40,40,0.16)", "#c62828", "overloaded: t=" + this.explanation.time]);
    ctx.font = "11px system-ui, sans-serif";
    bands.forEach(function (band, k) {
      var x0 = left + (band[0] - v.t0) * sx, x1 = left + (band[0] + 1 - v.t0) * sx;
      if (x1 < plot.left || x0 > plot.left + plot.width) return;
      var w = Math.max(x1 - x0, 2);
      if (labelled) {
        ctx.fillStyle = band[2];
        var right = x0 + w / 2 + 4 + ctx.measureText(band[3]).width > plot.left + plot.width; // no room: label on the left
        ctx.textAlign = right ? "right" : "left";
        ctx.textBaseline = "bottom";
        ctx.fillText(band[3], x0 + w / 2 + (right ? -4 : 4), plot.top + plot.height - 3 - 14 * k);
        return;
      }
      ctx.fillStyle = band[1];
      ctx.fillRect(x0, plot.top, w, plot.height);
      ctx.strokeStyle = band[2];
      ctx.lineWidth = 1;
      ctx.setLineDash([3, 3]);
      ctx.beginPath(); ctx.moveTo(x0 + w / 2, plot.top); ctx.lineTo(x0 + w / 2, plot.top + plot.height); ctx.stroke();
      ctx.setLineDash([]);
    });
  };

  Plan.prototype.drawAxes = function (ctx, plot, addressAxis) {
    var v = this.view;
    var a0 = addressAxis ? v.a0 : 0, a1 = addressAxis ? v.a1 : this.aTop;
    ctx.strokeStyle = "#9aa5b1";
    ctx.lineWidth = 1;
    ctx.strokeRect(plot.left + 0.5, plot.top + 0.5, plot.width, plot.height);
    ctx.fillStyle = "#52606d";
    ctx.font = "11px system-ui, sans-serif";
    // address (bytes) ticks
    var u = unitFor(Math.max(Math.abs(a0), Math.abs(a1)));
    var step = niceStep((a1 - a0) / UNITS[u], addressAxis ? 6 : 3) * UNITS[u];
    if (u === "B") step = Math.max(1, Math.round(step));
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (var a = Math.ceil(a0 / step) * step; a <= a1 + 1e-9; a += step) {
      var y = plot.top + plot.height - (a - a0) * plot.height / (a1 - a0);
      ctx.fillText(bytes(a, u), plot.left - 6, y);
      ctx.beginPath(); ctx.moveTo(plot.left - 3, y); ctx.lineTo(plot.left, y); ctx.stroke();
    }
    // time ticks (program points)
    var tStep = Math.max(1, Math.round(niceStep(v.t1 - v.t0, 8)));
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    for (var t = Math.ceil(v.t0 / tStep) * tStep; t <= v.t1; t += tStep) {
      var x = plot.left + (t - v.t0) * plot.width / (v.t1 - v.t0);
      ctx.fillText(String(t), x, plot.top + plot.height + 4);
      ctx.beginPath(); ctx.moveTo(x, plot.top + plot.height); ctx.lineTo(x, plot.top + plot.height + 3); ctx.stroke();
    }
  };

  function lowerBound(array, value) { // first index with array[i] > value, minus one (>= 0)
    var lo = 0, hi = array.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (array[mid] <= value) lo = mid + 1; else hi = mid; }
    return Math.max(0, lo - 1);
  }

  Plan.prototype.liveAt = function (t) {
    if (this.loadTime.length === 0 || t < this.loadTime[0]) return 0;
    return this.loadLive[lowerBound(this.loadTime, t)];
  };

  Plan.prototype.drawLoad = function (panel) {
    var ctx = prepare(panel);
    var plot = panel.plot, v = this.view;
    panel.canvas.dataset.view = [v.t0, v.t1, 0, this.aTop].join(" ");
    var sx = plot.width / (v.t1 - v.t0), sy = plot.height / this.aTop;
    var bottom = plot.top + plot.height, right = plot.left + plot.width;
    var times = this.loadTime, live = this.loadLive;
    ctx.save();
    ctx.beginPath();
    ctx.rect(plot.left, plot.top, plot.width, plot.height);
    ctx.clip();
    this.drawBands(ctx, plot, sx, false);
    ctx.beginPath();
    ctx.moveTo(plot.left, bottom);
    if (times.length) {
      var first = lowerBound(times, v.t0), k, steps = 0;
      for (k = first; k < times.length && times[k] <= v.t1; k++) steps++;
      var prev = v.t0 < times[0] ? 0 : live[first];
      if (steps <= 2 * plot.width) { // exact steps
        ctx.lineTo(plot.left, bottom - prev * sy);
        for (k = first; k < times.length && times[k] <= v.t1; k++) {
          if (times[k] <= v.t0) continue;
          var x = plot.left + (times[k] - v.t0) * sx;
          ctx.lineTo(x, bottom - prev * sy);
          ctx.lineTo(x, bottom - live[k] * sy);
          prev = live[k];
        }
        ctx.lineTo(right, bottom - prev * sy);
      } else { // level of detail: the largest live bytes of each pixel column
        var width = Math.max(1, Math.ceil(plot.width)), columns = new Float64Array(width);
        for (k = first; k < times.length && times[k] <= v.t1; k++) {
          var ts = Math.max(times[k], v.t0), te = k + 1 < times.length ? Math.min(times[k + 1], v.t1) : v.t1;
          if (v.t0 < times[0] && k === first && times[k] > v.t0) ts = times[k];
          var c0 = Math.max(0, Math.floor((ts - v.t0) * sx)), c1 = Math.min(width - 1, Math.ceil((te - v.t0) * sx) - 1);
          for (var c = c0; c <= c1; c++) if (live[k] > columns[c]) columns[c] = live[k];
        }
        for (c = 0; c < width; c++) {
          ctx.lineTo(plot.left + c, bottom - columns[c] * sy);
          ctx.lineTo(plot.left + c + 1, bottom - columns[c] * sy);
        }
      }
    }
    ctx.lineTo(right, bottom);
    ctx.closePath();
    ctx.fillStyle = "rgba(120,144,156,0.45)";
    ctx.fill();
    ctx.strokeStyle = "#37474f";
    ctx.lineWidth = 1;
    ctx.stroke();
    var load = num(this.report.load);
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "bottom";
    ctx.textAlign = "right";
    var y = bottom - load * sy;
    ctx.setLineDash([2, 3]);
    ctx.strokeStyle = "#2e7d32";
    ctx.beginPath(); ctx.moveTo(plot.left, y); ctx.lineTo(right, y); ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = "#2e7d32";
    lineLabel(ctx, "LOAD " + bytes(load), right - 4, y, plot);
    if (this.capacity !== null) {
      y = bottom - this.capacity * sy;
      ctx.setLineDash([6, 4]);
      ctx.strokeStyle = "#c62828";
      ctx.beginPath(); ctx.moveTo(plot.left, y); ctx.lineTo(right, y); ctx.stroke();
      ctx.setLineDash([]);
    }
    if (this.report.contended) { // the most contended point on the curve
      var time = num(this.report.contended.time);
      var cx = plot.left + (time + 0.5 - v.t0) * sx, cy = bottom - num(this.report.contended.bytes) * sy;
      ctx.fillStyle = "#ef6c00";
      ctx.beginPath(); ctx.arc(cx, cy, 4, 0, 2 * Math.PI); ctx.fill();
    }
    ctx.restore();
    this.drawAxes(ctx, plot, false);
    ctx.fillStyle = "#1f2933";
    ctx.font = "12px system-ui, sans-serif";
    ctx.textAlign = "left";
    ctx.textBaseline = "alphabetic";
    ctx.fillText("live bytes (LOAD curve)", plot.left, 15);
  };

  // ------------------------------------------------------------------------------------
  // Interaction

  Plan.prototype.toData = function (panel, x, y) {
    var plot = panel.plot, v = this.view;
    var t = v.t0 + (x - plot.left) * (v.t1 - v.t0) / plot.width;
    var a1 = panel.kind === "load" ? this.aTop : v.a1, a0 = panel.kind === "load" ? 0 : v.a0;
    var a = a0 + (plot.top + plot.height - y) * (a1 - a0) / plot.height;
    return { t: t, a: a, inside: x >= plot.left && x <= plot.left + plot.width && y >= plot.top && y <= plot.top + plot.height };
  };

  /* The buffer under (t, a) in the panel's first layout; else the nearest within 3 pixels. */
  Plan.prototype.hit = function (panel, t, a) {
    if (!panel.layouts.length) return -1;
    var off = this.layouts[panel.layouts[0]].off;
    var v = this.view, plot = panel.plot;
    var dt = 3 * (v.t1 - v.t0) / plot.width, da = 3 * (v.a1 - v.a0) / plot.height;
    var start = this.start, end = this.end, size = this.size;
    var best = -1, bestDistance = Infinity;
    for (var i = 0; i < this.n; i++) {
      var o = off[i], s = size[i];
      if (o !== o || s <= 0) continue;
      if (start[i] - dt > t || t >= end[i] + dt || o - da > a || a >= o + s + da) continue;
      if (start[i] <= t && t < end[i] && o <= a && a < o + s) return i;
      var ex = t < start[i] ? (start[i] - t) / dt : t >= end[i] ? (t - end[i]) / dt : 0;
      var ey = a < o ? (o - a) / da : a >= o + s ? (a - o - s) / da : 0;
      var distance = ex * ex + ey * ey;
      if (distance < bestDistance) { bestDistance = distance; best = i; }
    }
    return best;
  };

  Plan.prototype.attach = function (panel) {
    var self = this, canvas = panel.canvas;
    var drag = null;
    function local(event) {
      var rect = canvas.getBoundingClientRect();
      return [event.clientX - rect.left, event.clientY - rect.top];
    }
    canvas.addEventListener("mousedown", function (event) {
      var p = local(event);
      drag = { x: p[0], y: p[1], view: Object.assign({}, self.view), moved: false };
      event.preventDefault();
    });
    window.addEventListener("mouseup", function (event) {
      if (drag === null) return;
      var wasClick = !drag.moved;
      drag = null;
      canvas.classList.remove("tela-dragging");
      if (wasClick && event.target === canvas && panel.kind === "layout") {
        var p = local(event), d = self.toData(panel, p[0], p[1]);
        self.select(d.inside ? self.hit(panel, d.t, d.a) : -1);
      }
    });
    canvas.addEventListener("mousemove", function (event) {
      var p = local(event);
      if (drag !== null) {
        var dx = p[0] - drag.x, dy = p[1] - drag.y;
        if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
        if (!drag.moved) return;
        canvas.classList.add("tela-dragging");
        var plot = panel.plot, w = drag.view;
        var shiftT = -dx * (w.t1 - w.t0) / plot.width;
        self.view.t0 = w.t0 + shiftT; self.view.t1 = w.t1 + shiftT;
        if (panel.kind === "layout") {
          var shiftA = dy * (w.a1 - w.a0) / plot.height;
          self.view.a0 = w.a0 + shiftA; self.view.a1 = w.a1 + shiftA;
        }
        hideTooltip();
        self.requestDraw();
        return;
      }
      var d = self.toData(panel, p[0], p[1]);
      if (!d.inside) { hideTooltip(); return; }
      if (panel.kind === "load") {
        var t = Math.floor(d.t);
        showTooltip(event, "<b>time " + t + "</b><br><span class=\"tela-k\">live</span> " + escapeHtml(exactBytes(self.liveAt(t))), -1);
        return;
      }
      var i = self.hit(panel, d.t, d.a);
      if (i < 0) hideTooltip(); else showTooltip(event, self.describe(i, panel), i);
    });
    canvas.addEventListener("mouseleave", function () { hideTooltip(); });
    canvas.addEventListener("wheel", function (event) {
      event.preventDefault();
      var p = local(event), d = self.toData(panel, p[0], p[1]);
      var factor = Math.exp(Math.max(-300, Math.min(300, event.deltaY)) * 0.0015);
      var v = self.view;
      if (!event.altKey) {
        var t0 = d.t - (d.t - v.t0) * factor, t1 = d.t + (v.t1 - d.t) * factor;
        if (t1 - t0 >= 0.5) { v.t0 = t0; v.t1 = t1; }
      }
      if (panel.kind === "layout" && !event.shiftKey) {
        var a0 = d.a - (d.a - v.a0) * factor, a1 = d.a + (v.a1 - d.a) * factor;
        if (a1 - a0 >= 1) { v.a0 = a0; v.a1 = a1; }
      }
      hideTooltip();
      self.requestDraw();
    }, { passive: false });
    canvas.addEventListener("dblclick", function () { self.resetView(); self.draw(); });
  };

  Plan.prototype.requestDraw = function () {
    var self = this;
    if (this.pending) return;
    this.pending = true;
    window.requestAnimationFrame(function () { self.pending = false; self.draw(); });
  };

  Plan.prototype.describe = function (i, panel) {
    var lines = ["<b>" + escapeHtml(this.ids[i]) + "</b>"];
    var b = this.plan.buffers;
    function line(key, value) { lines.push("<span class=\"tela-k\">" + key + "</span> " + escapeHtml(value)); }
    line("size", exactBytes(b.size[i]));
    line("lifetime", "[" + b.start[i] + ", " + b.end[i] + ")");
    var self = this;
    var group = panel && panel.layouts.length ? panel.layouts : this.layouts.map(function (_, k) { return k; });
    group.forEach(function (k, position) {
      var layout = self.layouts[k];
      var raw = layout.raw[i];
      if (raw === null) return;
      var key = group.length > 1 || position > 0 ? "offset (" + layout.label + ")" : "offset";
      line(key, exactBytes(raw) + ", up to " + bytes(num(raw) + self.size[i]));
    });
    line("alignment", exactBytes(b.alignment[i]));
    line("pin", b.pin[i] === null ? "none (placed by the solver)" : "pinned at " + exactBytes(b.pin[i]));
    var sources = this.plan.sources;
    if (sources) {
      if (sources.op[i] !== null) line("op", sources.op[i]);
      line("location", sources.loc[i] === null ? "unknown" : sources.loc[i]);
    }
    return lines.join("<br>");
  };

  Plan.prototype.select = function (i) {
    this.selected = i;
    this.neighbours = [];
    var details = this.details;
    details.textContent = "";
    if (i >= 0) {
      var s = this.start[i], e = this.end[i];
      var list = [];
      for (var j = 0; j < this.n; j++) {
        if (j !== i && this.size[j] > 0 && this.start[j] < e && s < this.end[j]) list.push(j);
      }
      var size = this.size;
      this.neighbours = list;
      var sorted = list.slice().sort(function (a, b) { return size[b] - size[a] || a - b; });
      details.dataset.selected = this.ids[i];
      details.appendChild(el("b", null, this.ids[i]));
      details.appendChild(document.createTextNode(": " + exactBytes(this.plan.buffers.size[i]) + ", live [" + this.plan.buffers.start[i] + ", " +
        this.plan.buffers.end[i] + "); its lifetime overlaps " + list.length + " buffer" + (list.length === 1 ? "" : "s") + (list.length ? " (largest first): " : "")));
      var self = this;
      sorted.slice(0, 30).forEach(function (j) {
        var button = el("button", null, self.ids[j]);
        button.type = "button";
        button.addEventListener("click", function () { self.select(j); self.zoomTo(j); });
        details.appendChild(button);
      });
      if (sorted.length > 30) details.appendChild(document.createTextNode(" \u2026 and " + (sorted.length - 30) + " more"));
    } else {
      delete details.dataset.selected;
    }
    this.requestDraw();
  };

  Plan.prototype.zoomTo = function (i) {
    var span = this.end[i] - this.start[i];
    var v = this.view;
    v.t0 = Math.max(this.tMin - 1, this.start[i] - 2 * span);
    v.t1 = Math.min(this.tMax + 1, this.end[i] + 2 * span);
    var layout = this.layouts.length ? this.layouts[0] : null;
    var o = layout ? layout.off[i] : NaN;
    if (o === o) {
      var pad = Math.max(this.size[i] * 3, this.aTop / 200);
      v.a0 = Math.max(0, o - pad);
      v.a1 = Math.min(this.aTop, o + this.size[i] + pad);
      if (!(v.a1 > v.a0)) { v.a0 = 0; v.a1 = this.aTop; }
    } else {
      v.a0 = 0; v.a1 = this.aTop;
    }
    this.requestDraw();
  };

  Plan.prototype.search = function (query) {
    query = query.trim();
    var status = this.searchStatus;
    status.classList.remove("tela-error");
    if (!query) { status.textContent = ""; return; }
    if (this.idIndex === null) {
      this.idIndex = new Map();
      for (var i = 0; i < this.n; i++) this.idIndex.set(this.ids[i], i);
    }
    var found = this.idIndex.has(query) ? this.idIndex.get(query) : -1;
    var how = "found";
    if (found < 0) { // no exact id: the first id that contains the text (case-insensitive)
      var lower = query.toLowerCase();
      for (i = 0; i < this.n; i++) { if (this.ids[i].toLowerCase().indexOf(lower) >= 0) { found = i; how = "first id containing '" + query + "':"; break; } }
    }
    if (found < 0) {
      status.textContent = "no buffer '" + query + "'";
      status.classList.add("tela-error");
      return;
    }
    status.textContent = how + " '" + this.ids[found] + "'";
    status.dataset.found = this.ids[found];
    this.select(found);
    this.zoomTo(found);
  };

  function escapeHtml(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }

  function showTooltip(event, content, index) {
    tooltip.innerHTML = content;
    tooltip.dataset.buffer = String(index);
    tooltip.hidden = false;
    var x = event.clientX + 14, y = event.clientY + 14;
    var w = tooltip.offsetWidth, h = tooltip.offsetHeight;
    if (x + w > window.innerWidth - 4) x = Math.max(4, event.clientX - w - 14);
    if (y + h > window.innerHeight - 4) y = Math.max(4, event.clientY - h - 14);
    tooltip.style.left = x + "px";
    tooltip.style.top = y + "px";
  }
  function hideTooltip() { tooltip.hidden = true; }

  // ------------------------------------------------------------------------------------
  // The page: a header with one tab per plan, the active plan below.

  var viewer = {
    ready: false,
    plans: [],
    active: 0,
    show: function (index) {
      this.active = index;
      var self = this;
      data.plans.forEach(function (plan, k) {
        if (k === index && !self.plans[k]) {
          self.plans[k] = new Plan(plan, k);
          app.appendChild(self.plans[k].root);
        }
        if (self.plans[k]) self.plans[k].root.hidden = k !== index;
        if (tabs[k]) tabs[k].setAttribute("aria-selected", k === index ? "true" : "false");
      });
      hideTooltip();
      this.plans[index].draw();
    },
    refresh: function () { if (this.plans[this.active]) this.plans[this.active].draw(); },
    current: function () { return this.plans[this.active]; }
  };
  window.telaViewer = viewer;

  var header = el("header", "tela-header");
  header.appendChild(el("h1", null, "telamalloc plan viewer: " + data.title));
  var tabs = [];
  if (data.plans.length > 1) {
    var nav = el("nav", "tela-tabs");
    data.plans.forEach(function (plan, k) {
      var tab = el("button", null, plan.name);
      tab.type = "button";
      tab.setAttribute("role", "tab");
      tab.addEventListener("click", function () { viewer.show(k); });
      nav.appendChild(tab);
      tabs.push(tab);
    });
    header.appendChild(nav);
  }
  app.appendChild(header);
  document.body.appendChild(tooltip);
  document.addEventListener("keydown", function (event) {
    if (event.target && (event.target.tagName === "INPUT" || event.target.tagName === "SELECT")) return;
    var plan = viewer.current();
    if (!plan) return;
    if (event.key === "Escape") plan.select(-1);
    if (event.key === "0") { plan.resetView(); plan.draw(); }
  });
  window.addEventListener("resize", function () { if (viewer.current()) viewer.current().requestDraw(); });
  if (data.plans.length) {
    viewer.show(0);
  } else {
    app.appendChild(el("p", null, "no plans"));
  }
  viewer.readyAt = performance.now();
  viewer.ready = true;
})();
