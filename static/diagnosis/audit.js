// The reviewers' audit page on a phone: every round but the last folds to its heading line (a tap
// opens it), so the page is not one long scroll of earlier rounds.
document.addEventListener("DOMContentLoaded", () => {
  if (!window.matchMedia("(max-width: 767px)").matches) {
    return;
  }
  const rounds = [...document.querySelectorAll("details.round")];
  rounds.slice(0, -1).forEach((round) => {
    round.open = false;
  });
});
