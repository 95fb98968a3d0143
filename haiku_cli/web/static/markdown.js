// Markdown to HTML for answers and documents, written for this page: everything is escaped first, then a
// safe subset becomes elements (headings, lists, tables, code, quotes, emphasis, links). HTML a document
// or a model wrote is shown as text, never made into elements; links go only to http(s) and mailto.
"use strict";

function esc(s) {
  return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}

const SAFE_URL = /^(https?:\/\/|mailto:)/i;

// One line's inline Markdown. `opts.cites`: `[n]` becomes a citation link (answers, not documents).
function inline(text, opts) {
  return String(text).split(/(`[^`\n]+`)/).map((piece, i) => {
    if (i % 2) return "<code>" + esc(piece.slice(1, -1)) + "</code>";
    let s = esc(piece);
    s = s.replace(/!\[([^\]]*)\]\(picture:([^)\s]+)\)/g,
      (_, alt, ref) => '<img class="pic" data-ref="' + ref + '" alt="' + alt + '">');
    // Other images are not fetched (nothing leaves this machine): their description stands in.
    s = s.replace(/!\[([^\]]*)\]\([^)\s]*\)/g, (_, alt) => '<span class="image-alt">' + (alt || "image") + "</span>");
    s = s.replace(/\[([^\]]+)\]\(((?:[^()\s]|\([^()\s]*\))+)(?:\s+&quot;[^)]*&quot;)?\)/g, (whole, label, url) =>
      SAFE_URL.test(url) ? '<a href="' + url + '" target="_blank" rel="noopener noreferrer">' + label + "</a>"
        : label);
    s = s.replace(/&lt;((?:https?:\/\/|mailto:)[^\s&]+)&gt;/g,
      (_, url) => '<a href="' + url + '" target="_blank" rel="noopener noreferrer">' + url + "</a>");
    s = s.replace(/(\*\*|__)(?=\S)([\s\S]*?\S)\1/g, "<strong>$2</strong>");
    s = s.replace(/(^|[^*\w])\*(?=\S)([^*]*?\S)\*(?!\w)/g, "$1<em>$2</em>");
    s = s.replace(/(^|[^_\w])_(?=\S)([^_]*?\S)_(?!\w)/g, "$1<em>$2</em>");
    s = s.replace(/~~(?=\S)([^~]*?\S)~~/g, "<del>$1</del>");
    if (opts && opts.cites) s = s.replace(/\[(\d+)\](?!\()/g, '<a class="cite" data-n="$1">[$1]</a>');
    return s;
  }).join("");
}

const FENCE = /^\s*(```|~~~)/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/;
const RULE = /^\s{0,3}([-*_])(?:\s*\1){2,}\s*$/;
const ITEM = /^(\s*)([-*+]|\d+[.)])\s+(.*)$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;
const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

function cells(line) {
  return line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
}

// Block Markdown. Lines of a paragraph are joined as one flowing text (a line ending in two spaces or a
// backslash keeps its break); headings sit two levels under the page's own.
function markdown(src, opts) {
  const lines = String(src || "").replace(/\r\n?/g, "\n").split("\n");
  const out = [];
  let para = [];
  const lists = []; // open lists, outermost first: {kind, indent}
  const flush = () => {
    if (para.length) {
      const text = para.map((l, i) => inline(l.trim(), opts) + (i < para.length - 1 ? (/( {2}|\\)$/.test(l) ? "<br>" : " ") : ""));
      out.push("<p>" + text.join("") + "</p>");
    }
    para = [];
  };
  const closeTo = (depth) => { while (lists.length > depth) out.push("</li></" + lists.pop().kind + ">"); };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    let m;
    if ((m = FENCE.exec(line))) {
      flush(); closeTo(0);
      const code = [];
      while (++i < lines.length && !lines[i].trim().startsWith(m[1])) code.push(lines[i]);
      out.push("<pre><code>" + esc(code.join("\n")) + "</code></pre>");
    } else if ((m = HEADING.exec(line))) {
      flush(); closeTo(0);
      const level = Math.min(m[1].length + 2, 6);
      out.push("<h" + level + ">" + inline(m[2], opts) + "</h" + level + ">");
    } else if (para.length === 1 && /^\s{0,3}(=+|-+)\s*$/.test(line)) {
      const level = line.trim()[0] === "=" ? 3 : 4; // a setext heading: its text underlined
      out.push("<h" + level + ">" + inline(para[0].trim(), opts) + "</h" + level + ">");
      para = [];
    } else if (RULE.test(line) && !para.length) {
      closeTo(0);
      out.push("<hr>");
    } else if (line.includes("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      flush(); closeTo(0);
      const head = cells(line);
      let html = "<table><thead><tr>" + head.map((c) => "<th>" + inline(c, opts) + "</th>").join("") + "</tr></thead><tbody>";
      i += 1;
      while (i + 1 < lines.length && lines[i + 1].includes("|") && lines[i + 1].trim()) {
        i += 1;
        html += "<tr>" + cells(lines[i]).map((c) => "<td>" + inline(c, opts) + "</td>").join("") + "</tr>";
      }
      out.push(html + "</tbody></table>");
    } else if ((m = ITEM.exec(line))) {
      flush();
      const indent = m[1].replace(/\t/g, "    ").length;
      const kind = /\d/.test(m[2]) ? "ol" : "ul";
      while (lists.length && indent < lists[lists.length - 1].indent) closeTo(lists.length - 1);
      const top = lists[lists.length - 1];
      if (top && indent === top.indent && top.kind === kind) {
        out.push("</li><li>");
      } else if (top && indent <= top.indent) {
        closeTo(lists.length - 1);
        out.push("<" + kind + "><li>");
        lists.push({ kind: kind, indent: indent });
      } else {
        const start = kind === "ol" && parseInt(m[2], 10) !== 1 ? ' start="' + parseInt(m[2], 10) + '"' : "";
        out.push("<" + kind + start + "><li>");
        lists.push({ kind: kind, indent: indent });
      }
      out.push(inline(m[3], opts));
    } else if ((m = QUOTE.exec(line))) {
      flush(); closeTo(0);
      const quoted = [m[1]];
      while (i + 1 < lines.length && (m = QUOTE.exec(lines[i + 1]))) { quoted.push(m[1]); i += 1; }
      out.push("<blockquote>" + markdown(quoted.join("\n"), opts) + "</blockquote>");
    } else if (!line.trim()) {
      flush();
      // A blank line ends a list unless the list goes on after it.
      let next = i + 1;
      while (next < lines.length && !lines[next].trim()) next += 1;
      if (next >= lines.length || !(ITEM.test(lines[next]) || (lists.length && /^\s{2,}\S/.test(lines[next])))) closeTo(0);
    } else if (lists.length && /^\s+\S/.test(line) && !para.length) {
      out.push(" " + inline(line.trim(), opts)); // an item's text going on over the next line
    } else {
      closeTo(0);
      para.push(line);
    }
  }
  flush(); closeTo(0);
  return out.join("");
}
