Feature: Announce a post
  A post is written as a Ghost draft, published, and its link posted on Bluesky. Publishing at
  Ghost is idempotent, so a failed publish is tried again; Bluesky takes every post anew, so a post
  is never sent to it twice blindly.

  Background:
    Given alice is in group "staff"
    And the run is started by alice

  Scenario: the post is published and its link posted on Bluesky
    When announce runs with
      | title | Autumn launch                |
      | html  | <p>Our autumn range.</p>     |
      | slug  | autumn-launch                |
      | note  | The autumn range is here:    |
    Then the run succeeds
    And the Ghost draft autumn-launch was written
    And ghost.post.publish was called
    And bluesky.post.create was called with
      | text | The autumn range is here: https://blog.example.com/autumn-launch/ |
    And the bluesky's state at "posts" has 1 item
    And the run's output contains
      | url | https://blog.example.com/autumn-launch/ |

  Scenario: Ghost fails once while publishing, and the publish is tried again
    Given ghost.post.publish fails once
    When announce runs with
      | title | Autumn launch |
      | slug  | autumn-launch |
    Then the run succeeds
    And ghost.post.publish reached the vendor 2 times
    And ghost.post.create reached the vendor 1 time
    And Bluesky has the post "Autumn launch https://blog.example.com/autumn-launch/"

  Scenario: Bluesky's reply is lost: the run stops, and the link was posted once
    Given bluesky.post.create loses its reply once
    When announce runs with
      | title | Autumn launch |
      | slug  | autumn-launch |
    Then the run fails with "driver_failed"
    And bluesky.post.create reached the vendor 1 time
    And the bluesky's state at "posts" has 1 item

  Scenario: someone outside staff may not announce
    Given the run is started by walk-in
    When announce runs with
      | title | Autumn launch |
      | slug  | autumn-launch |
    Then the run fails with "policy_denied"
    And ghost.post.create was not called
    And bluesky.post.create was not called
