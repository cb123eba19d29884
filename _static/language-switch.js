// The other language's edition of this page (tools/book_i18n.py), at the section the reader is
// reading: the sections of both editions have the same ids. The header's button calls
// goToEdition; the link at the top of the page works without JavaScript and gets the section too.
// The innermost section whose heading has reached the top of the window (below the headers
// that stay on screen).
function sectionBeingRead() {
  let top = 0;
  for (const header of document.querySelectorAll(".bd-header, .bd-header-article")) {
    const box = header.getBoundingClientRect();
    if (box.top <= 1 && box.bottom > top) top = box.bottom;
  }
  let current = "";
  for (const section of document.querySelectorAll("article section[id]")) {
    if (section.getBoundingClientRect().top > top + 40) break;
    current = section.id;
  }
  return current;
}

function goToEdition(url) {
  const id = sectionBeingRead();
  window.location.href = url + (id ? "#" + id : "");
}

document.addEventListener("DOMContentLoaded", () => {
  for (const link of document.querySelectorAll("a.language-switch-link")) {
    link.addEventListener("click", () => {
      const id = sectionBeingRead();
      link.hash = id ? "#" + id : "";
    });
  }
});
