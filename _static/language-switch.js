// The link to this page in the other language (tools/book_i18n.py) takes the reader to the
// section they are reading: the sections of both editions have the same ids.
function sectionBeingRead() {
  let current = "";
  for (const section of document.querySelectorAll("article section[id]")) {
    if (section.getBoundingClientRect().top > window.innerHeight / 3) break;
    current = section.id;
  }
  return current;
}

document.addEventListener("DOMContentLoaded", () => {
  for (const link of document.querySelectorAll("a.language-switch-link")) {
    link.addEventListener("click", () => {
      const id = sectionBeingRead();
      link.hash = id ? "#" + id : "";
    });
  }
});
