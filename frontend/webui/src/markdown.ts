// A small, safe Markdown renderer for model answers: every character of the
// input is HTML-escaped before any markup is added, and links keep only
// http(s) and mailto targets. Fenced and inline code, headings, emphasis,
// lists, block quotes, rules, paragraphs and line breaks.

export function escapeHTML(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** Renders inline markup of one line of raw text. */
export function inline(raw: string): string {
  // Code spans first: their contents take no other markup.
  raw = raw.replace(/\u0000/g, '\uFFFD');
  const parts = raw.split(/(`+[^`]*?`+)/);
  let out = '';
  for (const p of parts) {
    const m = /^(`+)([^`]*?)\1$/.exec(p);
    if (m && p.length > 1) {
      out += '<code>' + escapeHTML(m[2]) + '</code>';
      continue;
    }
    out += spans(escapeHTML(p));
  }
  return out;
}

function spans(s: string): string {
  // Links become placeholders so that emphasis never reaches their URLs.
  const links: string[] = [];
  s = s.replace(/\[([^\]\u0000]+)\]\(([^)\s]+)\)/g, (all, text: string, href: string) => {
    const url = href.replace(/&amp;/g, '&');
    if (!/^(https?:\/\/|mailto:)/i.test(url)) return all;
    links.push('<a href="' + href + '" rel="noopener noreferrer" target="_blank">' + emphasis(text) + '</a>');
    return '\u0000' + (links.length - 1) + '\u0000';
  });
  return emphasis(s).replace(/\u0000(\d+)\u0000/g, (_, i: string) => links[Number(i)]);
}

function emphasis(s: string): string {
  s = s.replace(/\*\*(?=\S)(.+?)\*\*/g, '<strong>$1</strong>');
  s = s.replace(/__(?=\S)(.+?)__/g, '<strong>$1</strong>');
  s = s.replace(/(^|[^*\w])\*(?=\S)([^*]+?)\*(?!\w)/g, '$1<em>$2</em>');
  s = s.replace(/(^|[^_\w])_(?=\S)([^_]+?)_(?!\w)/g, '$1<em>$2</em>');
  s = s.replace(/~~(?=\S)(.+?)~~/g, '<del>$1</del>');
  return s;
}

type List = { tag: 'ul' | 'ol'; items: string[] };

/** Renders Markdown source to HTML. An unclosed fence (a streaming answer) is code to the end. */
export function render(src: string): string {
  const lines = src.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  let para: string[] = [];
  let list: List | null = null;
  let quote: string[] = [];

  const flushPara = () => {
    if (para.length) out.push('<p>' + para.map(inline).join('<br>') + '</p>');
    para = [];
  };
  const flushList = () => {
    if (list) out.push('<' + list.tag + '>' + list.items.map((i) => '<li>' + i + '</li>').join('') + '</' + list.tag + '>');
    list = null;
  };
  const flushQuote = () => {
    if (quote.length) out.push('<blockquote>' + render(quote.join('\n')) + '</blockquote>');
    quote = [];
  };
  const flush = () => {
    flushPara();
    flushList();
    flushQuote();
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = /^\s*(```+|~~~+)\s*([\w+#.-]*)/.exec(line);
    if (fence) {
      flush();
      const code: string[] = [];
      let j = i + 1;
      while (j < lines.length && !lines[j].trim().startsWith(fence[1])) code.push(lines[j++]);
      const lang = fence[2] ? ' class="language-' + escapeHTML(fence[2]) + '" data-lang="' + escapeHTML(fence[2]) + '"' : '';
      out.push('<pre><code' + lang + '>' + escapeHTML(code.join('\n')) + '</code></pre>');
      i = j;
      continue;
    }
    if (/^\s*>/.test(line)) {
      flushPara();
      flushList();
      quote.push(line.replace(/^\s*>\s?/, ''));
      continue;
    }
    flushQuote();
    if (line.trim() === '') {
      flushPara();
      flushList();
      continue;
    }
    const h = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      flush();
      const n = h[1].length;
      out.push('<h' + n + '>' + inline(h[2]) + '</h' + n + '>');
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      out.push('<hr>');
      continue;
    }
    const li = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line);
    if (li) {
      flushPara();
      const tag = /\d/.test(li[1]) ? 'ol' : 'ul';
      if (list && list.tag !== tag) flushList();
      if (!list) list = { tag, items: [] };
      list.items.push(inline(li[2]));
      continue;
    }
    if (list && /^\s{2,}\S/.test(line)) {
      const items: string[] = (list as List).items;
      items[items.length - 1] += '<br>' + inline(line.trim());
      continue;
    }
    flushList();
    para.push(line);
  }
  flush();
  return out.join('\n');
}
