// Loaded after require.js and before the widget manager: resolve the
// manager's own module (and so its fonts) next to this file, not next to
// the page or on a CDN.
(function () {
  var here = document.currentScript.src.replace(/[^/]*$/, "");
  require.config({
    paths: {
      "@jupyter-widgets/html-manager": here + "npm/@jupyter-widgets/html-manager",
    },
  });
})();
