/**
 * Which methods a path answers, for `405 method_not_allowed` + `Allow`.
 * fastify's router only says "no route", so every route is recorded here as
 * it is added (an `onRoute` hook) and the not-found handler asks the table
 * whether the path exists under another method.
 *
 * Patterns are matched against the raw path: `:param` is one non-empty
 * segment. Wildcard routes (a CORS preflight's `OPTIONS *`) never make a
 * path exist on their own; they only add their method to a path that a
 * concrete route holds.
 */
export class RouteTable {
  private readonly concrete = new Map<string, { re: RegExp; methods: Set<string> }>();
  private readonly wildcard = new Set<string>();

  add(method: string | readonly string[], url: string): void {
    const methods = typeof method === 'string' ? [method] : method;
    if (url.includes('*')) {
      for (const m of methods) this.wildcard.add(m.toUpperCase());
      return;
    }
    let entry = this.concrete.get(url);
    if (entry === undefined) {
      const re = new RegExp(
        '^' +
          url
            .split('/')
            .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
            .join('/') +
          '$',
      );
      entry = { re, methods: new Set() };
      this.concrete.set(url, entry);
    }
    for (const m of methods) entry.methods.add(m.toUpperCase());
  }

  /** Every concrete route, as method and URL pattern. */
  list(): { method: string; url: string }[] {
    return [...this.concrete].flatMap(([url, { methods }]) => [...methods].map((method) => ({ method, url })));
  }

  /** Methods the path answers, sorted; empty when no concrete route holds it. */
  allowed(path: string): string[] {
    const out = new Set<string>();
    for (const { re, methods } of this.concrete.values()) if (re.test(path)) for (const m of methods) out.add(m);
    if (out.size === 0) return [];
    for (const m of this.wildcard) out.add(m);
    return [...out].sort();
  }
}
