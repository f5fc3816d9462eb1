/* agenticlens_frames offline report: starts plotly.js, which sits in the page as text
 * (#alf-plotly, plotly.py's own bundle, unchanged), as a blob: script.
 *
 * Why not a plain inline <script>: chromium parses and compiles an inline script on the
 * main thread, then compiles each function again as it is first called, about half of
 * plotly's cost before anything is drawn. A script loaded from a URL (blob: counts) is
 * streamed: V8 parses it on a background thread while the page goes on, and the
 * explicit compile hint on its first line (V8's "allFunctionsCalledOnLoad") has that
 * thread compile every function too, so the main thread only runs it. This script sits
 * before the page's markup, so the compiling overlaps the parsing of the page, its tables
 * and its figure data.
 *
 * window.alfPlotly resolves once plotly.js has run (report.js waits on it). Where a blob:
 * script cannot be made or fails to load, the same text runs as an inline script (its hash
 * is in the page's Content-Security-Policy, like this script's). */
(function () {
  "use strict";
  var text = document.getElementById("alf-plotly").textContent;
  function inline() {
    if (typeof window.Plotly !== "undefined") { return; }
    var s = document.createElement("script");
    s.textContent = text;
    document.head.appendChild(s);
  }
  window.alfPlotly = new Promise(function (resolve) {
    var url = null;
    try {
      url = URL.createObjectURL(new Blob(["//# allFunctionsCalledOnLoad\n", text],
                                         { type: "text/javascript" }));
    } catch (e) {
      url = null;
    }
    if (url === null) { inline(); resolve(); return; }
    var s = document.createElement("script");
    s.src = url;
    s.onload = function () { URL.revokeObjectURL(url); resolve(); };
    s.onerror = function () { URL.revokeObjectURL(url); inline(); resolve(); };
    document.head.appendChild(s);
  });
})();
