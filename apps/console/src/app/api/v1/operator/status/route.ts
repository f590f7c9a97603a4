import { operatorApiRoute } from "@/server/api/route";
import { getPlatformStatusDeps } from "@/server/api/deps";
import { platformStatus } from "@/server/services/platform-status";

export const dynamic = "force-dynamic";

export const GET = operatorApiRoute("operatorStatus", async () => ({ status: 200, body: await platformStatus(getPlatformStatusDeps()) }));
