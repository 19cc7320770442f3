// "Live Code" (the launch menu's thebe button), served from the book:
// book/_ext/vendored.py points sphinx-thebe at the copy of thebe in
// _static/bundled/thebe/ and writes this script into each page that has
// the button. A click first says what Live Code needs (a kernel on
// mybinder.org, over the network) and asks before anything leaves the
// site; only "Connect" asks Binder. When that fails (or the browser is
// offline, or thebe did not load), the page says so and how to run the
// notebooks at home, instead of waiting for ever.
document.addEventListener("DOMContentLoaded", () => {
  "use strict";
  const start = window.initThebeSBT;
  if (typeof start !== "function") {
    return;
  }
  let failed = false;

  function fail(reason) {
    if (failed) {
      return;
    }
    failed = true;
    console.warn("[Live Code]", reason);
    const note = document.createElement("p");
    note.className = "mha-live-code-note";
    note.setAttribute("role", "alert");
    const command = document.createElement("code");
    command.textContent = "make lab";
    note.append("Live Code runs this page's code on mybinder.org, which " +
      "could not be reached: it needs the network. To run the notebooks " +
      "on your own machine, clone the book's repository and run ",
      command, ".");
    // sphinx-thebe still updates its button: hide it, keep it.
    const button = document.querySelector(".thebe-launch-button");
    if (button) {
      button.hidden = true;
      button.after(note);
    } else {
      document.querySelector("section h1").after(note);
    }
  }

  // thebe 0.9 reports a failed connection as an "error" event.
  function watch() {
    window.thebelab.on("error", (name, data) => {
      const status = (data && data.status) || "";
      if (["error", "server-error", "session-error"].includes(status)) {
        fail((data && data.message) || status);
      }
    });
  }

  let asked = null;

  function ask() {
    // The question, once: what Live Code needs, and a button to go on.
    if (asked) {
      asked.querySelector("button").focus();
      return;
    }
    asked = document.createElement("p");
    asked.className = "mha-live-code-note";
    asked.setAttribute("role", "status");
    const command = document.createElement("code");
    command.textContent = "make lab";
    const go = document.createElement("button");
    go.type = "button";
    go.textContent = "Connect to mybinder.org";
    go.addEventListener("click", () => {
      asked.remove();
      connect();
    });
    asked.append("Live Code runs this page's code on mybinder.org, a " +
      "service on the internet: nothing is sent until you connect. " +
      "Offline, clone the book's repository and run ", command, ". ", go);
    const button = document.querySelector(".thebe-launch-button");
    (button || document.querySelector("section h1")).after(asked);
    go.focus();
  }

  function connect() {
    if (navigator.onLine === false) {
      fail("the browser is offline");
      return;
    }
    start();
    const script = document.querySelector('script[src$="thebe/index.js"]');
    if (window.thebelab) {
      watch();
    } else if (script) {
      script.addEventListener("load", () => {
        const style = document.createElement("link");
        style.rel = "stylesheet";
        style.href = script.src.replace(/index\.js$/, "thebe.css");
        document.head.append(style);
        watch();
      });
      script.addEventListener("error", () => fail("thebe did not load"));
    }
  }

  window.initThebeSBT = () => {
    if (!failed) {
      ask();
    }
  };
});
