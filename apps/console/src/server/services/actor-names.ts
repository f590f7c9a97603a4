import { sql, type Queryable } from "@tick/db";

export interface ActorRef {
  type: string;
  id: string | null;
}

const refKey = (r: ActorRef) => `${r.type}:${r.id ?? ""}`;

/**
 * Who did it, as a person reads it: a user's or platform operator's email, an API key's name
 * and prefix, `system`. One query for a whole page of actors; a key is looked up in this tenant only. An
 * actor that is gone keeps a readable name ("deleted user", "deleted API key").
 */
export async function actorNames(db: Queryable, tenantId: string, refs: ActorRef[]): Promise<(r: ActorRef) => string> {
  const userIds = [...new Set(refs.filter((r) => (r.type === "user" || r.type === "operator") && r.id).map((r) => r.id!))];
  const keyIds = [...new Set(refs.filter((r) => r.type === "api_key" && r.id).map((r) => r.id!))];
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  const names = new Map<string, string>();
  if (userIds.length + keyIds.length > 0) {
    const rows = await sql.actorNameRows(db, { userIds: userIds.filter((id) => uuid.test(id)), keyIds: keyIds.filter((id) => uuid.test(id)), tenantId });
    for (const r of rows) names.set(`${r.kind}:${r.id}`, r.name);
  }
  return (r) => {
    if (r.type === "system" || !r.id) return r.type === "system" ? "system" : r.type;
    if (r.type === "api_key") return `API key ${names.get(refKey(r)) ?? "(deleted)"}`;
    const email = names.get(`user:${r.id}`);
    if (r.type === "operator") return `${email ?? "deleted user"} (platform operator)`;
    return email ?? (r.type === "user" ? "deleted user" : `${r.type} ${r.id}`);
  };
}

/** "user:<id>" / "api_key:<id>" as stored on replays. */
export const parseActor = (actor: string): ActorRef => {
  const i = actor.indexOf(":");
  return i < 0 ? { type: actor, id: null } : { type: actor.slice(0, i), id: actor.slice(i + 1) };
};
