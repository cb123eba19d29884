// The other language's edition of this page (tools/book_i18n.py), at the section the reader is
// reading: the sections of both editions have the same ids. The header's button calls
// goToEdition; the link at the top of the page works without JavaScript and gets the section too.
function sectionBeingRead() {
  let current = "";
  for (const section of document.querySelectorAll("article section[id]")) {
    if (section.getBoundingClientRect().top > window.innerHeight / 3) break;
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
