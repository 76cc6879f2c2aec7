import type { ModelDef } from '../storage/index.js';
import type { ResourceDecl } from './define.js';

/** Every declared resource, by name. The app, the OpenAPI document and the authorization matrix read it. */
export class ResourceRegistry {
  readonly #byName = new Map<string, ResourceDecl>();

  add(...decls: ResourceDecl[]): this {
    for (const d of decls) {
      if (this.#byName.has(d.name)) throw new Error(`resource ${d.name} declared twice`);
      this.#byName.set(d.name, d);
    }
    for (const d of decls) {
      if (d.parent && !this.#byName.has(d.parent.resource))
        throw new Error(`resource ${d.name}: parent ${d.parent.resource} is not declared`);
    }
    return this;
  }

  get(name: string): ResourceDecl {
    const d = this.#byName.get(name);
    if (!d) throw new Error(`resource ${name} is not declared`);
    return d;
  }

  all(): ResourceDecl[] {
    return [...this.#byName.values()];
  }

  models(): ModelDef[] {
    return this.all().map((d) => d.model);
  }
}
