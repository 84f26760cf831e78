// Two members of a ParamSet used at once: each accessor borrows the whole set.
use tabula::prelude::*;

struct Health(u32);

fn heal(mut set: ParamSet<(Query<&'static mut Health>, Query<&'static Health>)>) {
    let mut writer = set.p0();
    let reader = set.p1();
    for mut health in writer.iter_mut() {
        health.0 += reader.iter().count() as u32;
    }
}

fn main() {
    let mut schedule = Schedule::new();
    schedule.add_systems(heal);
}
