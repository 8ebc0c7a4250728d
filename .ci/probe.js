// Injected by .ci/check_pages.py into every page it serves. Once MathJax has
// typeset (at once on pages without it), it measures what is wider than the
// content column or hidden behind a horizontal scrollbar, lists the page's
// requests (Resource Timing, failed ones included), and writes the findings
// as JSON into a hidden pre element (id kmt-probe) that --dump-dom shows.
var SLACK = 2;  // pixels of overflow that are rounding, not hidden content
(function () {
  // ?kmt-slice=S&kmt-height=H: the page moved up by S * H pixels, so that a screenshot H pixels high shows
  // its S-th slice (a whole long page is captured in slices).
  var slice = /[?&]kmt-slice=(\d+)&kmt-height=(\d+)/.exec(location.search);
  if (slice) {
    document.documentElement.style.transform = "translateY(-" + (+slice[1] * +slice[2]) + "px)";
  }
  function describe(el) {
    // by characters, not UTF-16 units: a cut surrogate pair (math italic letters) would not encode
    var text = Array.from((el.innerText || el.textContent || "").replace(/\s+/g, " ").trim()).slice(0, 90).join("");
    return el.tagName.toLowerCase() + (el.className && el.className.baseVal === undefined
      ? "." + String(el.className).trim().split(/\s+/).join(".") : "") + ": " + text;
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
    // The page itself wider than the screen (a column pushed out by an unbreakable line scrolls the
    // whole page sideways, which no element's edge against the column shows).
    var page = document.documentElement.scrollWidth;
    if (page > window.innerWidth + SLACK) {
      wide.push("the page [" + page + " > " + window.innerWidth + " px wide]");
    }
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
    // An equation number drawn over its formula (both boxes on the same place of the page).
    var overlap = [];
    column.querySelectorAll("div.math").forEach(function (math) {
      var number = math.querySelector("span.eqno"), formula = math.querySelector("mjx-container");
      if (!number || !formula) return;
      var a = number.getBoundingClientRect(), b = formula.getBoundingClientRect();
      var inner = formula.querySelector("mjx-math") || formula;
      var c = inner.getBoundingClientRect();
      var right = Math.min(b.right, c.right);
      if (a.left < right - SLACK && a.right > c.left + SLACK && a.top < c.bottom - SLACK && a.bottom > c.top + SLACK) {
        overlap.push(describe(number) + " over " + describe(formula));
      }
    });
    var requests = performance.getEntriesByType("resource").map(function (e) { return e.name; });
    var out = document.createElement("pre");
    out.id = "kmt-probe";
    out.style.display = "none";
    out.textContent = JSON.stringify({wide: wide, hidden: hidden, cut: cut, broken: broken, overlap: overlap,
                                      requests: requests, height: document.documentElement.scrollHeight});
    document.body.appendChild(out);
  }
  window.addEventListener("load", function () {
    var done = window.MathJax && MathJax.startup && MathJax.startup.promise;
    (done || Promise.resolve()).then(function () { setTimeout(measure, 500); });
  });
})();
