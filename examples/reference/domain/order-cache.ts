/**
 * The order as a cached entity: how the reference app declares it (stage.cache.entities), the
 * key of one order and the keys an order change affects. The kit's cache knows no entity of its
 * own; these are its generic key functions applied to the order's declared attributes.
 */
import {
  entityCacheKey,
  keysForKeyFieldsChange,
  type CacheKeyspace,
  type CachedEntity,
  type KeyInvalidation,
} from 'tenang/runtime';

/** The order, as the reference declaration names it in stage.cache.entities. */
export const ORDER_ENTITY = {
  name: 'order',
  table: 'orders',
  key: 'orderId',
  version: 'version',
} as const satisfies CachedEntity;

/** The part of an order image the cache keys depend on. */
export interface OrderKeyFields {
  readonly orderId: string;
  readonly version: number;
}

/** Key of one order (its id a Redis hash tag, as for every cached entity). */
export function orderCacheKey(keyspace: CacheKeyspace, orderId: string): string {
  return entityCacheKey(keyspace, ORDER_ENTITY.name, orderId);
}

/** The keys an order change affects, fenced as every entity change is (keysForKeyFieldsChange). */
export function keysForOrderChange(
  keyspace: CacheKeyspace,
  oldImage: OrderKeyFields | undefined,
  newImage: OrderKeyFields | undefined,
): KeyInvalidation[] {
  const fields = (image: OrderKeyFields | undefined) =>
    image === undefined ? undefined : { id: image.orderId, version: image.version };
  return keysForKeyFieldsChange(keyspace, ORDER_ENTITY.name, fields(oldImage), fields(newImage));
}
