import { apiRoute } from "@/server/api/route";
import { previewRule } from "@/server/services/schedules";

export const dynamic = "force-dynamic";

export const POST = apiRoute("previewRule", async ({ body }) => ({ status: 200, body: previewRule(body) }));
