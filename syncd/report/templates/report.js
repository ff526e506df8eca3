// syncd report: search and page through every change held in #changes-data.
// Values are shown with textContent only: nothing from the data is ever parsed as HTML.
(() => {
  "use strict";
  const source = document.getElementById("changes-data");
  const form = document.getElementById("search");
  if (!source || !form) return;
  const data = JSON.parse(source.textContent);
  const groups = data.groups;
  const box = document.getElementById("q");
  const pick = document.getElementById("group");
  const failedOnly = document.getElementById("failed-only");
  const found = document.getElementById("found");
  const counter = document.getElementById("found-count");
  const results = document.querySelector("#results tbody");
  const more = document.getElementById("found-more");
  const haystacks = groups.map(() => []);
  const words = data.words;
  // A value is a word, or positions: [path, notes, path, notes, ...] as words.
  const text = (value) => {
    if (typeof value === "number") return words[value];
    const parts = [];
    for (let n = 0; n < value.length; n += 2) {
      const notes = words[value[n + 1]];
      parts.push(notes ? `${words[value[n]]} (${notes})` : words[value[n]]);
    }
    return parts.join("; ");
  };
  let matches = [];
  let listed = 0;

  const element = (tag, value, css) => {
    const made = document.createElement(tag);
    if (css) made.className = css;
    if (value !== undefined) made.textContent = value;
    return made;
  };

  const row = (g, i, tagged) => {
    const rows = groups[g].rows;
    const at = i * 4;
    const [state, failed] = data.states[rows[at + 3]];
    const tr = element("tr", undefined, failed ? "failed-row" : "");
    const record = element("td", undefined, "rec");
    if (tagged) record.append(element("span", `${groups[g].action} ${groups[g].kind}`, "tag"));
    record.append(element("span", rows[at], "who"));
    if (rows[at + 1]) record.append(" ", element("span", rows[at + 1], "name"));
    const what = element("td", undefined, "what");
    for (const [field, before, after] of data.details[rows[at + 2]]) {
      const line = element("div");
      line.append(element("span", words[field], "field"), " ");
      if (before === null) line.append(text(after));
      else line.append(element("del", text(before)), " → ", element("ins", text(after)));
      what.append(line);
    }
    tr.append(record, what, element("td", state, "out"));
    return tr;
  };

  const haystack = (g, i) => {
    let hay = haystacks[g][i];
    if (hay === undefined) {
      const rows = groups[g].rows;
      const at = i * 4;
      const lines = data.details[rows[at + 2]].map(([field, before, after]) =>
        [words[field], before === null ? "" : text(before), text(after)].join(" "));
      hay = [rows[at], rows[at + 1], ...lines, data.states[rows[at + 3]][0]]
        .join(" ")
        .toLowerCase();
      haystacks[g][i] = hay;
    }
    return hay;
  };

  const showMore = () => {
    const end = Math.min(matches.length, listed + data.step);
    const rows = document.createDocumentFragment();
    for (let n = listed; n < end; n += 1) rows.append(row(matches[n][0], matches[n][1], true));
    results.append(rows);
    listed = end;
    const total = matches.length.toLocaleString("en");
    counter.textContent =
      matches.length > listed ? `${total} changes found, the first ${listed} shown` : `${total} changes found`;
    more.hidden = listed >= matches.length;
  };

  const search = () => {
    const query = box.value.trim().toLowerCase();
    const only = pick.value;
    const failed = failedOnly.checked;
    matches = [];
    if (!query && only === "" && !failed) {
      found.hidden = true;
      return;
    }
    groups.forEach((group, g) => {
      if (only !== "" && String(g) !== only) return;
      const count = group.rows.length / 4;
      for (let i = 0; i < count; i += 1) {
        if (failed && !data.states[group.rows[i * 4 + 3]][1]) continue;
        if (query && !haystack(g, i).includes(query)) continue;
        matches.push([g, i]);
      }
    });
    results.replaceChildren();
    listed = 0;
    showMore();
    found.hidden = false;
  };

  box.addEventListener("input", search);
  pick.addEventListener("change", search);
  failedOnly.addEventListener("change", search);
  more.addEventListener("click", showMore);
  form.addEventListener("submit", (event) => event.preventDefault());
  form.hidden = false;

  for (const button of document.querySelectorAll("button.more")) {
    const g = Number(button.dataset.group);
    const body = document.querySelector(`#more-${g} tbody`);
    let next = Number(button.dataset.from);
    button.hidden = next * 4 >= groups[g].rows.length;
    button.addEventListener("click", () => {
      const end = Math.min(groups[g].rows.length / 4, next + data.step);
      for (; next < end; next += 1) body.append(row(g, next, false));
      body.closest("table").hidden = false;
      button.hidden = next * 4 >= groups[g].rows.length;
    });
  }
  for (const button of document.querySelectorAll("button.list-all")) {
    button.hidden = false;
    button.addEventListener("click", () => {
      box.value = button.dataset.error;
      pick.value = "";
      failedOnly.checked = true;
      search();
      form.scrollIntoView();
    });
  }
})();
