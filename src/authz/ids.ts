/**
 * Interned integer ids. Names are stored once per tenant graph; relations hold small integers,
 * branded so that a role id can never be passed where a permission id is expected.
 */
declare const brand: unique symbol;
export type Id<Kind extends string> = number & { readonly [brand]: Kind };
export type RoleId = Id<'role'>;
export type PermId = Id<'permission'>;
export type UserId = Id<'user'>;
