// A small SVG line chart: one polyline per series over a shared x range.

export interface Series {
  name: string;
  color: string;
  points: (number | null)[]; // one per tick, oldest first; null = no value
}

const W = 320;
const pad = 8; // room above and below the lines
const H = 120;
const svgNS = 'http://www.w3.org/2000/svg';

export const palette = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777'];

/** Draws series into svg, scaled to their largest value; capacity is the number of ticks the x axis spans. */
export function draw(svg: SVGSVGElement, series: Series[], capacity: number): void {
  let top = 0;
  for (const s of series) for (const p of s.points) if (p !== null && p > top) top = p;
  const most = top;
  top = top > 0 ? top * 1.1 : 1;
  const nodes: SVGElement[] = [];
  for (const y of [0.25, 0.5, 0.75]) {
    const g = document.createElementNS(svgNS, 'line');
    g.setAttribute('x1', '0');
    g.setAttribute('x2', String(W));
    g.setAttribute('y1', String(H * y));
    g.setAttribute('y2', String(H * y));
    g.setAttribute('class', 'grid');
    nodes.push(g);
  }
  const dx = W / Math.max(capacity - 1, 1);
  for (const s of series) {
    const off = capacity - s.points.length;
    let d = '';
    let pen = false;
    s.points.forEach((p, i) => {
      if (p === null) {
        pen = false;
        return;
      }
      const x = ((off + i) * dx).toFixed(1);
      const y = (H - pad - (p / top) * (H - 2 * pad)).toFixed(1);
      d += (pen ? 'L' : 'M') + x + ' ' + y + ' ';
      pen = true;
    });
    const path = document.createElementNS(svgNS, 'path');
    path.setAttribute('d', d.trim() || 'M0 ' + H);
    path.setAttribute('fill', 'none');
    path.setAttribute('stroke', s.color);
    path.setAttribute('stroke-width', '2');
    path.setAttribute('vector-effect', 'non-scaling-stroke');
    const title = document.createElementNS(svgNS, 'title');
    title.textContent = s.name;
    path.append(title);
    nodes.push(path);
    // A dot on the latest value, so that a short history shows.
    const lastAt = s.points.length - 1;
    const last = s.points[lastAt];
    if (last !== null && last !== undefined) {
      const dot = document.createElementNS(svgNS, 'circle');
      dot.setAttribute('cx', ((off + lastAt) * dx).toFixed(1));
      dot.setAttribute('cy', (H - pad - (last / top) * (H - 2 * pad)).toFixed(1));
      dot.setAttribute('r', '2.5');
      dot.setAttribute('fill', s.color);
      nodes.push(dot);
    }
  }
  const label = document.createElementNS(svgNS, 'text');
  label.setAttribute('x', '4');
  label.setAttribute('y', '12');
  label.setAttribute('class', 'axis');
  label.textContent = 'max ' + fmt(most);
  nodes.push(label);
  svg.replaceChildren(...nodes);
}

export function fmt(v: number): string {
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1);
  return v.toFixed(2);
}
