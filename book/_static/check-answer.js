// Short answers that check themselves (book/_ext/check_answer.py writes
// the forms). Offline: the expected answer is in the form's data-answer.
// A number matches a number ("64", "d_k = 64", "4x", "4 times"); any
// other answer matches after case, spaces and brackets are dropped
// ("(1, 5, 768)" = "[1,5,768]"). The status line is a live region.

function mhaNumber(text) {
  // The part after the last "=", without a trailing "x", "×" or "times".
  const tail = text.split("=").pop().trim().replace(/\u2212/g, "-");
  const bare = tail.replace(/\s*(x|×|times)$/i, "").replace(/,/g, "");
  return /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(bare)
    ? Number(bare)
    : NaN;
}

function mhaAnswerMatches(given, answer) {
  const expected = mhaNumber(answer);
  if (!Number.isNaN(expected)) {
    const got = mhaNumber(given);
    return Math.abs(got - expected) <= 1e-9 * Math.max(1, Math.abs(expected));
  }
  const plain = (s) => s.toLowerCase().replace(/torch\.size|[\s()[\]]/g, "");
  return plain(given) !== "" && plain(given) === plain(answer);
}

function mhaCheckAnswer(given, answer, hint) {
  if (given.trim() === "") return {right: false, message: "Type an answer first."};
  if (mhaAnswerMatches(given, answer)) {
    return {right: true, message: `Right: ${answer.trim()}.`};
  }
  return {right: false, message: `Not yet. Hint: ${hint}`};
}

if (typeof document !== "undefined") {
  document.querySelectorAll("form.mha-check").forEach((form) => {
    const input = form.querySelector("input");
    const status = form.querySelector(".mha-check-status");
    form.hidden = false;
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const {right, message} = mhaCheckAnswer(
        input.value, form.dataset.answer, form.dataset.hint);
      // textContent: the hint is shown as text, never parsed as HTML.
      status.textContent = message;
      status.classList.toggle("mha-check-right", right);
      input.setAttribute("aria-invalid", String(!right && input.value !== ""));
    });
  });
}
