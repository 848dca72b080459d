// A minimal DOM for running the explorer page's script under node where no browser exists:
// elements with attributes, classes, dataset, children and onclick; selectors of the forms
// `tag`, `.cls`, `tag.cls`, `#id`, `[data-x=v]` and descendant/comma combinations of them.
// Usage: node explore_dom.js PAGE.html SCRIPT.js — SCRIPT gets `document`, `click(el)` and
// `report(obj)` (printed as JSON); any exception exits non-zero.
"use strict";
const fs = require("fs");

class ClassList {
  constructor(el) { this.el = el; }
  get set() { return new Set(this.el.className.split(/\s+/).filter(Boolean)); }
  write(s) { this.el.className = [...s].join(" "); }
  add(...cs) { const s = this.set; cs.forEach((c) => s.add(c)); this.write(s); }
  remove(...cs) { const s = this.set; cs.forEach((c) => s.delete(c)); this.write(s); }
  contains(c) { return this.set.has(c); }
  toggle(c, on) { const s = this.set; (on ?? !s.has(c)) ? s.add(c) : s.delete(c); this.write(s); }
}

class Node {}
class Text extends Node {
  constructor(t) { super(); this.data = t; }
  get textContent() { return this.data; }
}
class Element extends Node {
  constructor(tag) {
    super();
    this.tagName = tag.toLowerCase(); this.children = []; this.attrs = {}; this.className = "";
    this.dataset = {}; this.parent = null; this.classList = new ClassList(this); this.onclick = null;
  }
  set id(v) { this.attrs.id = v; } get id() { return this.attrs.id || ""; }
  setAttribute(k, v) {
    v = String(v);
    if (k === "class") this.className = v; else this.attrs[k] = v;
    if (k.startsWith("data-")) this.dataset[k.slice(5).replace(/-(\w)/g, (_, c) => c.toUpperCase())] = v;
  }
  getAttribute(k) { return k === "class" ? this.className : this.attrs[k] ?? null; }
  append(...kids) {
    for (const k of kids) {
      const n = k instanceof Node ? k : new Text(String(k));
      n.parent = this; this.children.push(n);
    }
  }
  remove() { if (this.parent) this.parent.children = this.parent.children.filter((c) => c !== this); }
  set textContent(v) { this.children = []; if (v !== "") this.append(String(v)); }
  get textContent() { return this.children.map((c) => c.textContent).join(""); }
  *descendants() {
    for (const c of this.children) if (c instanceof Element) { yield c; yield* c.descendants(); }
  }
  matches(simple) {
    const m = simple.match(/^([a-z0-9]*)((?:[.#][\w-]+)*)((?:\[[\w-]+=[^\]]+\])*)$/i);
    if (!m) throw new Error(`selector not supported: ${simple}`);
    if (m[1] && m[1].toLowerCase() !== this.tagName) return false;
    for (const part of m[2].match(/[.#][\w-]+/g) || []) {
      if (part[0] === "." && !this.classList.contains(part.slice(1))) return false;
      if (part[0] === "#" && this.id !== part.slice(1)) return false;
    }
    for (const [, k, v] of m[3].matchAll(/\[([\w-]+)=([^\]]+)\]/g)) {
      if (this.getAttribute(k) !== v.replace(/^["']|["']$/g, "")) return false;
    }
    return true;
  }
  querySelectorAll(selector) {
    const out = [];
    for (const alt of selector.split(",")) {
      const chain = alt.trim().split(/\s+/);
      for (const el of this.descendants()) {
        if (!el.matches(chain[chain.length - 1])) continue;
        let i = chain.length - 2, up = el.parent;
        while (i >= 0 && up) { if (up.matches(chain[i])) i--; up = up.parent; }
        if (i < 0 && !out.includes(el)) out.push(el);
      }
    }
    return out;
  }
  querySelector(selector) { return this.querySelectorAll(selector)[0] ?? null; }
}

const [page, script] = process.argv.slice(2);
const html = fs.readFileSync(page, "utf8");
const body = new Element("body");
for (const [, tag, attrs] of html.matchAll(/<(nav|h1|div|section)\s+([^>]*id="[^"]+"[^>]*)><\/\1>/g)) {
  const el = new Element(tag);
  for (const [, k, v] of attrs.matchAll(/([\w-]+)="([^"]*)"/g)) el.setAttribute(k, v);
  body.append(el);
}
const blob = html.match(/<script type="application\/json" id="data">([\s\S]*?)<\/script>/)[1];
const dataEl = new Element("script"); dataEl.id = "data"; dataEl.append(blob); body.append(dataEl);
const document = {
  body,
  createElement: (t) => new Element(t),
  createElementNS: (_ns, t) => new Element(t),
  getElementById: (id) => body.querySelector(`#${id}`),
  querySelectorAll: (s) => body.querySelectorAll(s),
  querySelector: (s) => body.querySelector(s),
};
const pageScript = html.match(/<script>\n([\s\S]*?)<\/script>/)[1];
const click = (el) => { if (!el || !el.onclick) throw new Error("nothing to click"); el.onclick(); };
const report = (obj) => console.log(JSON.stringify(obj));
// the checks run in the page script's own scope, after it: they see its functions and state
new Function("document", "Node", "click", "report",
             pageScript + "\n;" + fs.readFileSync(script, "utf8"))(document, Node, click, report);
