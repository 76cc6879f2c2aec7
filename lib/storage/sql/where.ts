import type { DataSource, ObjectLiteral, SelectQueryBuilder, UpdateQueryBuilder, DeleteQueryBuilder, EntityMetadata } from 'typeorm';
import { invalid } from '../../errors/index.js';
import type { ModelDef } from '../model.js';
import type { Condition, Filter, Scalar, SortKey } from '../port.js';
import { valueClause, valueIndexOf } from './value-index.js';

type AnyQb = SelectQueryBuilder<ObjectLiteral> | UpdateQueryBuilder<ObjectLiteral> | DeleteQueryBuilder<ObjectLiteral>;

const OPS: Record<string, string> = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' };

/** Builds parameterised WHERE clauses; values go through the driver's own column conversion. */
export class WhereBuilder {
  #n = 0;
  constructor(private readonly ds: DataSource, private readonly meta: EntityMetadata, private readonly alias?: string, private readonly model?: ModelDef) {}

  col(field: string): string {
    const column = this.meta.findColumnWithPropertyName(field);
    if (!column || column.type === 'simple-json') throw invalid(`cannot filter or sort on ${field}`);
    const name = this.ds.driver.escape(column.databaseName);
    return this.alias ? `${this.ds.driver.escape(this.alias)}.${name}` : name;
  }

  value(field: string, v: Scalar): unknown {
    if (v === null) return null;
    const column = this.meta.findColumnWithPropertyName(field)!;
    return this.ds.driver.preparePersistentValue(v, column);
  }

  #param(): string {
    return `w${this.#n++}`;
  }

  apply<Q extends AnyQb>(qb: Q, filter: Filter | undefined): Q {
    const parts: string[] = [];
    const params: Record<string, unknown> = {};
    for (const [field, cond] of Object.entries(filter ?? {})) {
      const vi = this.model && valueIndexOf(this.model, field);
      if (vi) {
        parts.push(valueClause(this.model!, vi, cond, filter, this.col('uid'), (v) => {
          const p = this.#param();
          params[p] = v;
          return `:${p}`;
        }));
      } else {
        parts.push(this.#one(field, cond, params));
      }
    }
    if (parts.length) (qb as SelectQueryBuilder<ObjectLiteral>).andWhere(parts.join(' AND '), params);
    return qb;
  }

  #one(field: string, cond: Condition, params: Record<string, unknown>): string {
    const c = this.col(field);
    if (cond === null) return `${c} IS NULL`;
    if (typeof cond !== 'object' || cond instanceof Date) {
      const p = this.#param();
      params[p] = this.value(field, cond);
      return `${c} = :${p}`;
    }
    if ('$in' in cond || '$nin' in cond) {
      const list = ('$in' in cond ? cond.$in : (cond as { $nin: Scalar[] }).$nin) ?? [];
      if (!list.length) return '$in' in cond ? '1 = 0' : '1 = 1';
      const p = this.#param();
      params[p] = list.map((v) => this.value(field, v));
      return `${c} ${'$in' in cond ? 'IN' : 'NOT IN'} (:...${p})`;
    }
    if ('$ne' in cond) {
      if (cond.$ne === null) return `${c} IS NOT NULL`;
      const p = this.#param();
      params[p] = this.value(field, cond.$ne);
      return `(${c} <> :${p} OR ${c} IS NULL)`;
    }
    const parts: string[] = [];
    for (const [op, sql] of Object.entries(OPS)) {
      const v = (cond as Record<string, Scalar>)[op];
      if (v === undefined) continue;
      const p = this.#param();
      params[p] = this.value(field, v);
      parts.push(`${c} ${sql} :${p}`);
    }
    if (!parts.length) throw invalid(`unsupported condition on ${field}`);
    return parts.join(' AND ');
  }

  order(qb: SelectQueryBuilder<ObjectLiteral>, sort: SortKey[] | undefined): SelectQueryBuilder<ObjectLiteral> {
    const keys = [...(sort ?? [])];
    if (!keys.some((k) => k.field === 'uid')) keys.push({ field: 'uid', dir: keys[0]?.dir ?? 'asc' });
    keys.forEach((k, i) => {
      const dir = k.dir === 'desc' ? 'DESC' : 'ASC';
      if (i === 0) qb.orderBy(this.col(k.field), dir);
      else qb.addOrderBy(this.col(k.field), dir);
    });
    return qb;
  }
}
