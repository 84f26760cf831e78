// A ParamSet member's query data with an elided lifetime: spell it out as `'static`.
use tabula::prelude::*;

struct Health(u32);

fn heal(mut set: ParamSet<(Query<&mut Health>, Query<&Health>)>) {
    set.p0().for_each(|mut health| health.0 += 1);
}

fn main() {
    let mut schedule = Schedule::new();
    schedule.add_systems(heal);
}
