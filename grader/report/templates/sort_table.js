// Sorts the student table in the page (no server). The order lives in the address (#sort=total-desc), so a
// sorted view can be bookmarked or shared, and the back button undoes a sort.
(function () {
  "use strict";
  var table = document.getElementById("students-table");
  if (!table) { return; }
  var body = table.tBodies[0];
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var original = Array.prototype.slice.call(body.rows);

  function value(row, index) {
    var text = row.cells[index].getAttribute("data-sort");
    if (text === null) { text = row.cells[index].textContent; }
    var number = parseFloat(text);
    return { empty: text === "", number: isNaN(number) ? null : number, text: text.toLowerCase() };
  }

  function compare(a, b) {
    if (a.empty !== b.empty) { return a.empty ? 1 : -1; }          // empty cells last, either way
    if (a.number !== null && b.number !== null) { return a.number - b.number; }
    return a.text < b.text ? -1 : a.text > b.text ? 1 : 0;
  }

  function sortBy(key, descending) {
    var index = -1;
    headers.forEach(function (th, i) {
      var on = th.getAttribute("data-key") === key;
      if (on) { index = i; }
      th.setAttribute("aria-sort", on ? (descending ? "descending" : "ascending") : "none");
    });
    var rows = original.slice();
    if (index >= 0) {
      rows.sort(function (a, b) {
        var x = value(a, index), y = value(b, index);
        var order = compare(x, y);
        if (x.empty || y.empty) { return order; }
        return descending ? -order : order;
      });
    }
    rows.forEach(function (row) { body.appendChild(row); });
  }

  function fromAddress() {
    var match = /^#sort=([A-Za-z0-9_]+?)(-desc)?$/.exec(window.location.hash);
    if (match) { sortBy(match[1], Boolean(match[2])); }
  }

  headers.forEach(function (th) {
    var button = th.querySelector("button");
    if (!button) { return; }
    button.addEventListener("click", function () {
      var descending = th.getAttribute("aria-sort") === "ascending";
      window.location.hash = "sort=" + th.getAttribute("data-key") + (descending ? "-desc" : "");
    });
  });
  window.addEventListener("hashchange", fromAddress);
  fromAddress();
}());
