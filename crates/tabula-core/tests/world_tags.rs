//! World tags over many worlds: live worlds never share one while 256 or fewer are alive,
//! dropped worlds' tags are reused least recently released first, and past 256 live worlds
//! tags are shared (with a `tracing` warning). One test function, so that no other test of
//! this binary makes worlds meanwhile.

use std::collections::HashSet;

use tabula::{EntityError, World};

#[test]
// Tag leasing is safe code under a mutex, and under Miri the 556 worlds would take minutes.
#[cfg_attr(miri, ignore)]
fn live_worlds_never_share_a_tag_and_dropped_tags_come_back_in_order() {
    // 300 worlds made and dropped in a loop while the first lives: every one refuses the
    // first world's handle (before tags were leased, the 257th world took the first's tag
    // and read its data).
    let mut first = World::new();
    let e = first.spawn((7.0f32,));
    for _ in 0..300 {
        let mut other = World::new();
        other.spawn((9.0f32,));
        assert_ne!(other.tag(), first.tag());
        assert_eq!(
            other.get::<f32>(e),
            Err(EntityError::WrongWorld {
                entity: e,
                world: other.tag()
            })
        );
    }
    assert_eq!(first.get::<f32>(e), Ok(&7.0));

    // Up to 256 live worlds have 256 distinct tags.
    let mut live: Vec<World> = (1..256).map(|_| World::new()).collect();
    let tags: HashSet<u8> = live.iter().map(World::tag).chain([first.tag()]).collect();
    assert_eq!(tags.len(), 256, "one tag each while 256 are alive (first + 255)");
    let past = World::new();
    assert!(
        live.iter().any(|w| w.tag() == past.tag()) || first.tag() == past.tag(),
        "past 256 live worlds a tag is shared"
    );
    drop(past);
    let tags_again: HashSet<u8> = live.iter().map(World::tag).chain([first.tag()]).collect();
    assert_eq!(tags_again.len(), 256, "the shared tag's other holder kept it");

    // Dropped tags come back least recently released first.
    let a = live.remove(10).tag();
    let b = live.remove(20).tag();
    assert_eq!(
        World::new().tag(),
        a,
        "released first, taken first (and dropped again)"
    );
    let again = World::new();
    assert_eq!(again.tag(), b, "a was released again after b, so b is older");
    // `with_tag` pins its tag; `new` avoids it while it lives.
    drop(again);
    let pinned = World::with_tag(b);
    assert_ne!(World::new().tag(), b);
    drop(pinned);
}
