// Draws each plot of a report from its Vega-Lite spec (a JSON script element of class chart-spec
// beside its chart <div>). Served as a file by the web UI and
// inlined (allowed by its hash) in the standalone HTML report: no inline script, no eval.
// ast: true makes Vega interpret its expressions instead of compiling them with Function();
// defaultStyle: false and the tooltip's disableDefaultStyle keep vega-embed from adding <style>
// elements (the tooltip's style is vega/vega-tooltip.css, linked or inlined beside this).
(function () {
  document.querySelectorAll("script.chart-spec").forEach(function (node) {
    var key = node.dataset.chart;
    var target = document.querySelector('div.chart[data-chart="' + key + '"]');
    var options = {
      actions: false,
      renderer: "svg",
      ast: true,
      defaultStyle: false,
      tooltip: { disableDefaultStyle: true },
    };
    vegaEmbed(target, JSON.parse(node.textContent), options)
      .then(function () { target.dataset.rendered = "true"; })
      .catch(function (err) {
        target.dataset.rendered = "error";
        target.textContent = "plot failed: " + err;
      });
  });
})();
