/* Glossary terms on a touch screen: the first tap shows the definition in
 * place (chapter.css draws it from data-definition), a second tap follows
 * the link to the glossary; a tap elsewhere closes it. With a mouse, hover
 * shows it and a click follows the link, as before. */
let lastPointer = "mouse";
document.addEventListener("pointerdown", (event) => {
  lastPointer = event.pointerType;
}, true);
document.addEventListener("click", (event) => {
  const term = event.target.closest("a[data-definition]");
  for (const open of document.querySelectorAll("a[data-definition].mha-open")) {
    if (open !== term) {
      open.classList.remove("mha-open");
    }
  }
  if (!term || lastPointer !== "touch") {
    return;
  }
  if (!term.classList.contains("mha-open")) {
    event.preventDefault();
    term.classList.add("mha-open");
  }
});
