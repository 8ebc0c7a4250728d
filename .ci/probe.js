// Injected by .ci/check_pages.py into every page it serves. Once MathJax has
// typeset (at once on pages without it), it measures what is wider than the
// content column or hidden behind a horizontal scrollbar, lists the page's
// requests (Resource Timing, failed ones included), and writes the findings
// as JSON into a hidden pre element (id kmt-probe) that --dump-dom shows.
var SLACK = 2;  // pixels of overflow that are rounding, not hidden content
(function () {
  function describe(el) {
    var text = (el.innerText || el.textContent || "").replace(/\s+/g, " ").trim();
    return el.tagName.toLowerCase() + (el.className && el.className.baseVal === undefined
      ? "." + String(el.className).trim().split(/\s+/).join(".") : "") + ": " + text.slice(0, 90);
  }
  // A word (no digit in it) may break after one of its hyphens, as typesetting does; a number never.
  function atHyphen(node, start, word) {
    if (/[0-9]/.test(word)) return false;
    var last = null;
    for (var i = 0; i < word.length; i++) {
      var r = document.createRange();
      r.setStart(node, start + i);
      r.setEnd(node, start + i + 1);
      var rect = r.getBoundingClientRect();
      if (rect.width === 0) continue;
      if (last !== null && Math.round(rect.top) !== last && word[i - 1] !== "-") return false;
      last = Math.round(rect.top);
    }
    return true;
  }
  function measure() {
    var column = document.querySelector("article.bd-article") || document.body;
    var right = column.getBoundingClientRect().right, wide = [], hidden = [], cut = [], cutRoots = [];
    var seen = new Set();
    column.querySelectorAll("*").forEach(function (el) {
      var style = getComputedStyle(el);
      if (style.display === "none" || style.visibility === "hidden" || el.closest("details:not([open])")) return;
      var box = el.getBoundingClientRect();
      if (box.width === 0) return;
      var scrolls = /(auto|scroll)/.test(style.overflowX);
      if (scrolls && el.scrollWidth > el.clientWidth + SLACK) {
        hidden.push(describe(el) + " [" + el.scrollWidth + " > " + el.clientWidth + " px]");
      }
      var clipped = false;
      for (var p = el.parentElement; p && p !== column; p = p.parentElement) {
        var overflow = getComputedStyle(p).overflowX;
        if (/(auto|scroll|hidden|clip)/.test(overflow)) {
          clipped = true;
          // A box that hides its overflow cuts off what reaches past its edge: no scrollbar shows
          // the rest. (MathJax's hidden assistive copy of a formula is not shown anyway.)
          var edge = p.getBoundingClientRect().right;
          if (/(hidden|clip)/.test(overflow) && box.right > edge + SLACK && !el.closest("mjx-assistive-mml")
              && !cutRoots.some(function (r) { return r.contains(el); })) {
            cutRoots.push(el);
            cut.push(describe(el) + " [right edge " + Math.round(box.right) + " > " + Math.round(edge) + " px]");
          }
          break;
        }
      }
      if (!clipped && box.right > right + SLACK) {
        seen.add(el);
        if (!seen.has(el.parentElement)) wide.push(describe(el) + " [right edge " + Math.round(box.right) + " > " + Math.round(right) + " px]");
      }
    });
    // A word or number of a table cell broken across lines: its characters sit on more than one line.
    var broken = [];
    column.querySelectorAll("td, th").forEach(function (cell) {
      var walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT), node;
      while ((node = walker.nextNode())) {
        var re = /\S+/g, m;
        while ((m = re.exec(node.data))) {
          var range = document.createRange();
          range.setStart(node, m.index);
          range.setEnd(node, m.index + m[0].length);
          var tops = new Set();
          Array.prototype.forEach.call(range.getClientRects(), function (r) {
            if (r.width > 0) tops.add(Math.round(r.top));
          });
          if (tops.size > 1 && !atHyphen(node, m.index, m[0])) broken.push(describe(cell) + " [" + m[0] + "]");
        }
      }
    });
    var requests = performance.getEntriesByType("resource").map(function (e) { return e.name; });
    var out = document.createElement("pre");
    out.id = "kmt-probe";
    out.style.display = "none";
    out.textContent = JSON.stringify({wide: wide, hidden: hidden, cut: cut, broken: broken, requests: requests});
    document.body.appendChild(out);
  }
  window.addEventListener("load", function () {
    var done = window.MathJax && MathJax.startup && MathJax.startup.promise;
    (done || Promise.resolve()).then(function () { setTimeout(measure, 500); });
  });
})();
