/* agenticlens_frames offline report: draws the figures embedded as JSON in #alf-data.
 * No network access: plotly.js is inlined in the page, the data sit in the page, and
 * every user string is either pre-escaped for plotly (labels, hover) or set with
 * textContent (attempt details, controls), never as HTML. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("alf-data").textContent);
  var config = { displaylogo: false, responsive: true };
  var plots = [];
  var dark = window.matchMedia("(prefers-color-scheme: dark)");

  function css(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }
  function clone(value) { return JSON.parse(JSON.stringify(value)); }

  // Colours follow the page's CSS variables, so light/dark switches both together. The
  // heatmap's plot area is grey: a cell without a value (no evaluated attempt) shows it,
  // where a transparent one looked like an empty or white cell.
  function themed(layout, heat) {
    var out = clone(layout || {});
    var fg = css("--fg"), line = css("--line");
    out.paper_bgcolor = "rgba(0,0,0,0)";
    out.plot_bgcolor = heat ? css("--grey") : "rgba(0,0,0,0)";
    out.font = Object.assign(out.font || {}, { color: fg });
    out.legend = Object.assign(out.legend || {}, { bgcolor: "rgba(0,0,0,0)" });
    out.template = null;
    var axes = Object.keys(out).filter(function (k) { return /^[xy]axis\d*$/.test(k); });
    if (axes.indexOf("xaxis") < 0) { axes.push("xaxis"); }
    if (axes.indexOf("yaxis") < 0) { axes.push("yaxis"); }
    axes.forEach(function (k) {
      out[k] = Object.assign(out[k] || {}, { gridcolor: line, zerolinecolor: line, linecolor: line });
    });
    (out.annotations || []).forEach(function (a) { a.font = Object.assign(a.font || {}, { color: fg }); });
    return out;
  }

  function retheme() {
    plots.forEach(function (gd) {
      if (gd.layout) { Plotly.relayout(gd, themed(gd.layout, gd.id === "fig-heatmap")); }
    });
  }
  if (dark.addEventListener) { dark.addEventListener("change", retheme); }

  // ------------------------------------------------------------------ lazy drawing
  // Each figure costs plotly tens of milliseconds of layout however small it is, and a
  // reader sees one or two on opening the page: those are drawn first, then the rest one
  // per idle moment (nearest first), and any figure scrolled into view (or printed) before
  // its turn at once. Every container is given its figure's height beforehand, so drawing
  // never moves the page.
  var drawers = {}, drawn = {}, pending = [], observer = null;

  function heightOf(id) {
    if (id === "fig-heatmap") { return heatHeight(rowsNow().length); }
    var fig = id === "fig-pareto" ? paretoFigure() : data.figures[id.slice(4)];
    return fig && fig.layout ? fig.layout.height : null;
  }
  function ensure(id) {
    if (drawn[id] || !drawers[id]) { return drawn[id] || Promise.resolve(null); }
    var gd = document.getElementById(id);
    if (observer) { observer.unobserve(gd); }
    plots.push(gd);
    // Once drawn the figure holds its own height (the heatmap's changes with the filters).
    drawn[id] = drawers[id]().then(function (out) { gd.style.minHeight = ""; labelFigure(gd); return out; });
    if (pending.every(function (p) { return drawn[p]; })) { finish(); }
    return drawn[id];
  }
  // A drawn figure is named by its title for a screen reader (plotly's SVG has none); the
  // title's markup and escapes are read as the text they show.
  function labelFigure(gd) {
    var title = gd.layout && gd.layout.title;
    var text = typeof title === "string" ? title : (title && title.text) || "";
    var d = document.createElement("textarea");
    d.innerHTML = String(text).replace(/<br\s*\/?>/gi, " · ").replace(/<[^>]*>/g, "");
    gd.setAttribute("role", "figure");
    gd.setAttribute("aria-label", d.value || "figure");
  }
  function inView(id) {
    var r = document.getElementById(id).getBoundingClientRect();
    return r.bottom > 0 && r.top < window.innerHeight && r.width > 0;
  }
  function distance(id) {
    var r = document.getElementById(id).getBoundingClientRect();
    return r.bottom < 0 ? -r.bottom : Math.max(0, r.top - window.innerHeight);
  }
  function drawNextIdle() {
    var left = pending.filter(function (id) { return !drawn[id]; });
    if (!left.length) { return; }
    left.sort(function (a, b) { return distance(a) - distance(b); });
    ensure(left[0]).then(idle, idle);
  }
  function idle() {
    if (typeof window.requestIdleCallback === "function") {
      window.requestIdleCallback(drawNextIdle, { timeout: 2000 });
    } else {
      setTimeout(drawNextIdle, 50);
    }
  }
  var finished = false;
  function finish() {
    if (finished) { return; }
    finished = true;
    Promise.all(pending.map(function (id) { return drawn[id]; })).then(function () {
      window.alfDrawnMs = performance.now();
      document.body.dataset.ready = "true";
    });
  }
  function drawAll() { pending.forEach(ensure); }

  // ------------------------------------------------------------------ heatmap
  var H = data.heat;
  var state = { order: H.defaultOrder, vorder: "manifest", page: 0, size: H.pageSize,
                filters: {}, search: "", colour: H.defaultColour };

  function rowsNow() {
    return H.variantOrders[state.vorder].filter(function (r) {
      return Object.keys(state.filters).every(function (f) {
        return state.filters[f] === "" || H.factors[f][r] === state.filters[f];
      });
    });
  }
  function colsNow() {
    var cols = H.orders[state.order];
    var q = state.search.trim().toLowerCase();
    if (!q) { return cols; }
    return cols.filter(function (c) {
      return H.ids[c].toLowerCase().indexOf(q) >= 0 || H.names[c].toLowerCase().indexOf(q) >= 0;
    });
  }

  // Plotly renders a subset of HTML in hover labels: user strings go in escaped.
  function esc(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }
  // A cell's hover, worded as viz.case_heatmap words it (viz._passes_line), built only
  // for the cells shown; whatever the colour, it gives both the pass rate over the
  // evaluated attempts and the mean score. Stats: "evaluated|rate|score|latency"; the
  // passes and attempts are the cell's label.
  function hoverOf(r, c) {
    var stats = H.stats[r][c];
    if (stats === null) { return H.x[c] + "<br>variant " + H.y[r] + ": no data"; }
    var part = stats.split("|"), label = H.text[r][c].split("/");
    var evaluated = parseInt(part[0], 10), unevaluated = parseInt(label[1], 10) - evaluated;
    return "<b>" + esc(H.names[c]) + "</b><br>case " + H.x[c] + "<br>variant " +
      esc(H.variantNames[r]) + "<br>passed " + label[0] + "/" + evaluated + " evaluated (" +
      part[1] + ")" + (unevaluated > 0 ? "<br>" + unevaluated + " not evaluated (failed trial)" : "") +
      "<br>mean score " + part[2] + "<br>mean latency " + part[3] +
      (H.flaky[r][c] ? "<br><i>flaky: outcomes differ between trials</i>" : "");
  }

  function heatHeight(rows) { return Math.max(260, 110 + 46 * rows); }

  function drawHeat() {
    var gd = document.getElementById("fig-heatmap");
    var rows = rowsNow(), all = colsNow();
    var size = state.size > 0 ? state.size : Math.max(all.length, 1);
    var pages = Math.max(1, Math.ceil(all.length / size));
    state.page = Math.max(0, Math.min(state.page, pages - 1));
    var cols = all.slice(state.page * size, state.page * size + size);
    var pick = function (m) { return rows.map(function (r) { return cols.map(function (c) { return m[r][c]; }); }); };
    var x = cols.map(function (c) { return H.x[c]; });
    var trace = Object.assign(clone(H.trace), {
      z: pick(H.z[state.colour]), text: pick(H.text),
      hovertext: rows.map(function (r) { return cols.map(function (c) { return hoverOf(r, c); }); }),
      x: x, y: rows.map(function (r) { return H.y[r]; }),
      customdata: rows.map(function (r) { return cols.map(function (c) { return [r, c]; }); })
    });
    trace.colorbar = Object.assign(trace.colorbar || {}, { title: { text: H.colours[state.colour].title } });
    var layout = clone(H.layout);
    // Ticks of the cases on screen only (long ids shortened on the axis, whole in hover).
    layout.xaxis = Object.assign(layout.xaxis || {}, { tickmode: "array", tickvals: x,
      ticktext: cols.map(function (c) { return H.ticks[c]; }), showgrid: false });
    layout.yaxis = Object.assign(layout.yaxis || {}, { showgrid: false });  // not across grey cells
    var first = all.length ? state.page * size + 1 : 0;
    layout.title = Object.assign(layout.title || {}, { text: "Cases by variant",
      subtitle: { text: "cases " + first + "–" + (state.page * size + cols.length) + " of " +
                        all.length + " · " + H.orderLabels[state.order] + " · colour: " +
                        H.colours[state.colour].label } });
    layout.height = heatHeight(rows.length);
    // The flaky cells' outlines (viz.case_heatmap draws one rectangle shape each): one path
    // of a closed rectangle per cell, as plotly lays out and draws one shape for all of them
    // faster than ~100 shapes of their own (docs/performance.md, "HTML drawing").
    var outline = "";
    rows.forEach(function (r, i) {
      cols.forEach(function (c, j) {
        if (H.flaky[r][c]) {
          outline += "M" + (j - 0.5) + "," + (i - 0.5) + "H" + (j + 0.5) + "V" + (i + 0.5) +
            "H" + (j - 0.5) + "Z";
        }
      });
    });
    layout.shapes = outline ? [{ type: "path", path: outline, xref: "x", yref: "y",
                                 line: H.shapeLine, layer: "above" }] : [];
    document.getElementById("heat-page").textContent = "page " + (state.page + 1) + " of " + pages;
    document.getElementById("heat-empty").hidden = rows.length > 0 && cols.length > 0;
    return Plotly.react(gd, rows.length && cols.length ? [trace] : [], themed(layout, true), config);
  }

  // The compact attempt details (html.py _attempt_details): string-table indices, in a
  // block of their own parsed on the first click (absent from a saved report's page).
  var details;
  function attemptsOf(r, c) {
    if (details === undefined) {
      var block = document.getElementById("alf-details");
      details = block ? JSON.parse(block.textContent) : null;
    }
    var D = details, cell = D ? D.cells[r + ":" + c] : null;
    if (!cell) { return null; }
    var S = D.strings;
    return cell.map(function (a) {
      return { trial: a[0], status: S[a[1]], passed: !!a[2], score: S[a[3]], latency: S[a[4]],
               cost: S[a[5]], tools: S[a[6]], turns: S[a[7]], error: S[a[8]], output: S[a[9]],
               checks: a[10].map(function (k) { return [S[k[0]], !!k[1], S[k[2]], S[k[3]]]; }) };
    });
  }

  function showAttempts(point) {
    var panel = document.getElementById("attempts");
    if (!panel || !point || !point.customdata) { return; }
    var r = point.customdata[0], c = point.customdata[1];
    panel.replaceChildren();
    var head = document.createElement("h3");
    head.textContent = H.variants[r] + " · " + H.names[c] + " (" + H.ids[c] + ")";
    panel.appendChild(head);
    var items = attemptsOf(r, c);
    if (!items) {
      var p = document.createElement("p");
      p.className = "note";
      p.textContent = H.detailsNote;
      panel.appendChild(p);
      return;
    }
    items.forEach(function (a) {
      var box = document.createElement("div");
      box.className = "att";
      var line = document.createElement("div");
      line.textContent = "trial " + a.trial + " · " + a.status + " · " + (a.passed ? "passed" : "failed") +
        " · score " + a.score + " · " + a.latency + " · " + a.cost + " · tools: " + (a.tools || "none") +
        " · turns: " + a.turns + (a.error ? " · error: " + a.error : "");
      box.appendChild(line);
      var out = document.createElement("pre");
      out.textContent = a.output;
      box.appendChild(out);
      var list = document.createElement("ul");
      a.checks.forEach(function (k) {
        var li = document.createElement("li");
        li.className = k[1] ? "pass" : "fail";
        li.textContent = (k[1] ? "✓ " : "✗ ") + k[0] + " = " + k[2] + (k[3] ? " — " + k[3] : "");
        list.appendChild(li);
      });
      box.appendChild(list);
      panel.appendChild(box);
    });
  }

  // A control changed: redraw the heatmap, or draw it now if it was still waiting its turn.
  function redrawHeat() { return drawn["fig-heatmap"] ? drawHeat() : ensure("fig-heatmap"); }

  function bindHeatControls() {
    var on = function (id, ev, fn) { var el = document.getElementById(id); if (el) { el.addEventListener(ev, fn); } };
    on("heat-order", "change", function (e) { state.order = e.target.value; state.page = 0; redrawHeat(); });
    on("heat-vorder", "change", function (e) { state.vorder = e.target.value; redrawHeat(); });
    on("heat-colour", "change", function (e) { state.colour = e.target.value; redrawHeat(); });
    on("heat-size", "change", function (e) { state.size = parseInt(e.target.value, 10); state.page = 0; redrawHeat(); });
    on("heat-search", "input", function (e) { state.search = e.target.value; state.page = 0; redrawHeat(); });
    on("heat-prev", "click", function () { state.page -= 1; redrawHeat(); });
    on("heat-next", "click", function () { state.page += 1; redrawHeat(); });
    document.querySelectorAll("select[data-factor]").forEach(function (el) {
      el.addEventListener("change", function () { state.filters[el.dataset.factor] = el.value; applyFilters(); });
    });
  }

  // ------------------------------------------------------------------ filters
  // One factor filter for the page: rows of every table carry data-variant (or
  // data-factor-row), and each figure's traces or points are matched to variants by
  // their legend group (raw id), name or axis labels (escaped ids, as drawn).
  var allRaw = new Set(H.variants), allLabel = new Set(H.y);
  var TYPED = { f8: Float64Array, f4: Float32Array, i1: Int8Array, u1: Uint8Array,
                i2: Int16Array, u2: Uint16Array, i4: Int32Array, u4: Uint32Array };
  function plain(v) {  // plotly's typed-array spec → a plain array
    if (v && typeof v === "object" && v.bdata && TYPED[v.dtype]) {
      var bytes = Uint8Array.from(atob(v.bdata), function (ch) { return ch.charCodeAt(0); });
      return Array.from(new TYPED[v.dtype](bytes.buffer));
    }
    return v;
  }
  function kept() {
    var rows = H.variantOrders.manifest.filter(function (r) {
      return Object.keys(state.filters).every(function (f) {
        return state.filters[f] === "" || H.factors[f][r] === state.filters[f];
      });
    });
    return { raw: new Set(rows.map(function (r) { return H.variants[r]; })),
             label: new Set(rows.map(function (r) { return H.y[r]; })), n: rows.length };
  }
  function subset(t, mask) {
    var pick = function (arr) { return arr.filter(function (_, i) { return mask[i]; }); };
    ["x", "y", "text", "hovertext", "customdata"].forEach(function (k) {
      var v = plain(t[k]);
      if (Array.isArray(v) && v.length === mask.length) { t[k] = pick(v); }
    });
    ["color", "symbol"].forEach(function (k) {
      if (t.marker && Array.isArray(t.marker[k]) && t.marker[k].length === mask.length) {
        t.marker[k] = pick(t.marker[k]);
      }
    });
    ["error_x", "error_y"].forEach(function (e) {
      if (!t[e]) { return; }
      ["array", "arrayminus"].forEach(function (k) {
        var v = plain(t[e][k]);
        if (Array.isArray(v) && v.length === mask.length) { t[e][k] = pick(v); }
      });
    });
  }
  function filterTraces(traces) {
    var keep = kept();
    return clone(traces).map(function (t) {
      if (t.legendgroup !== undefined && allRaw.has(String(t.legendgroup))) {
        t.visible = keep.raw.has(String(t.legendgroup));
        return t;
      }
      var axis = ["y", "text"].filter(function (k) {
        return Array.isArray(t[k]) && t[k].length && t[k].every(function (v) { return allLabel.has(String(v)); });
      })[0];
      if (axis) {
        subset(t, t[axis].map(function (v) { return keep.label.has(String(v)); }));
        return t;
      }
      if (t.name !== undefined && allLabel.has(String(t.name))) {
        t.visible = keep.label.has(String(t.name));
        return t;
      }
      var factor = H.factorLabels[t.name];
      if (factor !== undefined && state.filters[factor] && Array.isArray(t.x)) {
        var level = state.filters[factor];
        subset(t, t.x.map(function (v) {
          var d = document.createElement("textarea");
          d.innerHTML = String(v);  // the bar label is escaped; compare the level itself
          return d.value === level;
        }));
      }
      return t;
    });
  }
  // The case table (html.py _cases_table): its rows enter the page when it is opened, and
  // their cells follow the header of their column through the variant filter.
  function hideCaseColumns() {
    document.querySelectorAll("table.cases").forEach(function (table) {
      var head = table.rows[0], hide = [];
      for (var k = 0; k < head.cells.length; k++) { hide.push(head.cells[k].hidden); }
      for (var i = 1; i < table.rows.length; i++) {
        var cells = table.rows[i].cells;
        for (var j = 1; j < cells.length; j++) { cells[j].hidden = hide[j]; }
      }
    });
  }
  function fillCaseTable() {
    var box = document.getElementById("case-table"), rows = document.getElementById("case-rows");
    if (!box || !rows || !box.open || box.dataset.filled) { return; }
    // Markup written by html.py _cases_table with every user string escaped.
    box.querySelector("table.cases tbody").insertAdjacentHTML("beforeend", rows.textContent);
    box.dataset.filled = "true";
    box.querySelectorAll("tbody td.c:not(.none)").forEach(function (td) { td.tabIndex = 0; });
    hideCaseColumns();
  }
  // The table is the heatmap's keyboard path (a plotly cell takes no focus): a cell with
  // data takes the focus, and Enter, Space or a click shows its attempts as a heatmap
  // click does.
  function caseCellAttempts(e) {
    if (e.type === "keydown" && e.key !== "Enter" && e.key !== " ") { return; }
    var td = e.target.closest ? e.target.closest("td.c:not(.none)") : null;
    if (!td) { return; }
    var vid = td.closest("table").rows[0].cells[td.cellIndex].dataset.variant;
    var r = H.variants.indexOf(vid), c = H.ids.indexOf(td.parentNode.dataset.case);
    if (r < 0 || c < 0) { return; }
    e.preventDefault();
    showAttempts({ customdata: [r, c] });
    document.getElementById("attempts").scrollIntoView({ block: "nearest" });
  }

  function applyFilters() {
    var keep = kept();
    document.querySelectorAll("[data-variant]").forEach(function (el) {
      el.hidden = !keep.raw.has(el.dataset.variant);
    });
    hideCaseColumns();
    // A block whose every filtered part is hidden goes; a note saying so comes.
    var allHidden = function (items) {
      return items.length > 0 && Array.prototype.every.call(items, function (el) { return el.hidden; });
    };
    document.querySelectorAll("[data-empty-when]").forEach(function (el) {
      el.hidden = allHidden(el.querySelectorAll(el.dataset.emptyWhen));
    });
    document.querySelectorAll("[data-all-hidden]").forEach(function (el) {
      el.hidden = !allHidden(document.querySelectorAll(el.dataset.allHidden));
    });
    document.querySelectorAll("[data-factor-row]").forEach(function (el) {
      var chosen = state.filters[el.dataset.factorRow];
      el.hidden = !!chosen && el.dataset.level !== chosen;
    });
    var status = document.getElementById("filter-status");
    if (status) { status.textContent = keep.n + " of " + H.variants.length + " variants"; }
    // Figures not drawn yet read the filters when their turn comes.
    var jobs = Object.keys(data.figures).filter(function (name) { return drawn["fig-" + name]; })
      .map(function (name) {
        var gd = document.getElementById("fig-" + name), fig = data.figures[name];
        return Plotly.react(gd, filterTraces(fig.data), themed(fig.layout), config);
      });
    if (drawn["fig-heatmap"]) { jobs.push(drawHeat()); }
    if (drawn["fig-pareto"]) { jobs.push(drawPareto()); }
    return Promise.all(jobs);
  }

  // ------------------------------------------------------------------ pareto
  function paretoFigure() {
    var x = document.getElementById("pareto-x").value, y = document.getElementById("pareto-y").value;
    return data.pareto.figures[x + "|" + y];
  }
  function drawPareto() {
    var fig = paretoFigure();
    var note = document.getElementById("pareto-note");
    note.hidden = !!fig;
    if (fig) {
      return Plotly.react(document.getElementById("fig-pareto"), filterTraces(fig.data), themed(fig.layout), config);
    }
    return Promise.resolve(null);
  }

  // ------------------------------------------------------------------ start
  function start() {
    if (typeof Plotly === "undefined") {
      document.querySelectorAll(".fig").forEach(function (el) { el.textContent = "plotly.js did not load."; });
      return;
    }
    Object.keys(data.figures).forEach(function (name) {
      var fig = data.figures[name];
      drawers["fig-" + name] = function () {
        return Plotly.newPlot(document.getElementById("fig-" + name), filterTraces(fig.data),
                              themed(fig.layout), config);
      };
    });
    var heat = document.getElementById("fig-heatmap");
    drawers["fig-heatmap"] = function () {
      return drawHeat().then(function () { heat.on("plotly_click", function (ev) { showAttempts(ev.points[0]); }); });
    };
    drawers["fig-pareto"] = drawPareto;
    pending = Object.keys(drawers).filter(function (id) { return document.getElementById(id); });
    var least = pending.length ? parseFloat(getComputedStyle(document.getElementById(pending[0])).minHeight) || 0 : 0;
    pending.forEach(function (id) {
      var h = heightOf(id);
      if (h > least) { document.getElementById(id).style.minHeight = h + "px"; }
    });
    document.getElementById("pareto-x").addEventListener("change", function () {
      return drawn["fig-pareto"] ? drawPareto() : ensure("fig-pareto");
    });
    document.getElementById("pareto-y").addEventListener("change", function () {
      return drawn["fig-pareto"] ? drawPareto() : ensure("fig-pareto");
    });
    bindHeatControls();
    var table = document.getElementById("case-table");
    if (table) {
      table.addEventListener("toggle", fillCaseTable);
      table.addEventListener("click", caseCellAttempts);
      table.addEventListener("keydown", caseCellAttempts);
    }
    fillCaseTable();
    window.addEventListener("beforeprint", drawAll);
    var print = window.matchMedia("print");
    if (print.addEventListener) {
      print.addEventListener("change", function (e) { if (e.matches) { drawAll(); } });
    }
    // What the reader sees first is drawn first; the page counts as shown once it is.
    var first = pending.filter(inView);
    if ("IntersectionObserver" in window) {
      observer = new IntersectionObserver(function (entries) {
        entries.forEach(function (e) { if (e.isIntersecting) { ensure(e.target.id); } });
      }, { rootMargin: "200px 0px" });
      pending.forEach(function (id) { if (!drawn[id]) { observer.observe(document.getElementById(id)); } });
    }
    Promise.all(first.map(ensure)).then(function () {
      window.alfViewportMs = performance.now();
      document.body.dataset.viewportDrawn = "true";
      if (!pending.length) { finish(); }
      idle();
    });
  }
  // plotly.js is compiled off the main thread (loader.js): draw once it has run.
  (window.alfPlotly || Promise.resolve()).then(start);
})();
